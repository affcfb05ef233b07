// A session storm: thousands of users open the partner's tile in the same minute and
// the worker onboards them in order, but a user who has reached the landing page is onboarded on
// demand by the API (links/embedded-onboarding.ts through the dispatcher's expedite), ahead of the
// backlog. Here no worker runs at all while the user lands, which is the worst backlog there is;
// then the worker comes and finds the user's session already done.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onboardingWorkflowId } from '../../workflows/onboard-embedded-session.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack();
});
afterAll(() => stack.close());

async function launch(userId: string): Promise<{ sessionId: string }> {
  const answer = await stack.admin.call<{ sessionId: string }>('POST', '/launch', { userId });
  expect(answer.status).toBe(200);
  return answer.body;
}

describe('a user who lands during a session storm', () => {
  it('gets the money page at once, though no worker has onboarded anyone yet; the workflow later finds the session done', async () => {
    // The storm: 40 users' tiles opened, their onboardings waiting for a worker that is not there.
    const crowd = await Promise.all(
      Array.from({ length: 40 }, () => stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00' })),
    );
    await Promise.all(crowd.map((user) => launch(user.userId)));
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00', firstName: 'Mayumi' });
    const { sessionId } = await launch(user.userId);
    expect(await stack.database.embeddedSession.count({ where: { status: 'PENDING' } })).toBeGreaterThanOrEqual(41);

    // The user opens the page: the money page, with a web session, not the loading page.
    const response = await fetch(`${stack.apiBase}/app?sessionId=${sessionId}`, { redirect: 'manual' });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text).toContain('name="csrf"');
    expect(text).toContain('Hello, Mayumi');
    const link = await stack.database.link.findUniqueOrThrow({
      where: { profileId_kind: { profileId: user.profileId, kind: 'EMBEDDED' } },
    });
    const session = await stack.database.embeddedSession.findFirstOrThrow({ where: { linkId: link.id } });
    expect(session).toMatchObject({ status: 'READY', accessTokenEncrypted: null, refreshTokenEncrypted: null });
    // The others still wait for the worker: nobody was onboarded who did not ask.
    expect(await stack.database.embeddedSession.count({ where: { status: 'PENDING' } })).toBeGreaterThanOrEqual(40);

    // The worker comes: the user's workflow finds the session done, and links nothing twice.
    await stack.startWorker();
    const result = await stack.temporal.workflow.getHandle(onboardingWorkflowId(session.id)).result();
    expect(result).toMatchObject({ status: 'READY', linkId: link.id });
    expect(await stack.database.link.count({ where: { profileId: user.profileId } })).toBe(1);
  }, 120_000);
});
