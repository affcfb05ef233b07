// The session URL's onboarding outbox on real infrastructure: a session stored with its "onboarding
// pending" row but no workflow (the API died between its commit and the start, or the start
// failed) is onboarded by the next dispatcher's sweep, and dispatching one session again (two API
// copies at once, a dispatcher that died after the start but before clearing the row) never
// starts a second onboarding.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOnboardingDispatcher,
  type OnboardingDispatcher,
  type OnboardingDispatcherOptions,
} from '../../api/embedded/onboarding-dispatcher.ts';
import { createLogger } from '../../lib/logger.ts';
import type { OnboardingStartOutcome } from '../../lib/metrics.ts';
import { hashBearer, sessionAccessTokenContext, sessionRefreshTokenContext } from '../../links/embedded-sessions.ts';
import { createSessionOnboarding } from '../../links/embedded-onboarding.ts';
import { unlink } from '../../links/link-record.ts';
import { storeSessionForOnboarding } from '../../links/onboarding-outbox.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { jwtExpiry } from '../../links/token-expiry.ts';
import { onboardingWorkflowId } from '../../workflows/onboard-embedded-session.contract.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
const dispatchers: OnboardingDispatcher[] = [];

beforeAll(async () => {
  stack = await startPartnerStack();
  // The stack's own dispatcher is the API process that "crashed": only the tests' dispatchers run.
  await stack.onboarding.stop();
  await stack.startWorker();
});
afterAll(async () => {
  await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop()));
  await stack?.close();
});

/** A dispatcher as an API process builds one, on the stack's task queue; its starts' outcomes are recorded. */
function dispatcher(overrides: Partial<OnboardingDispatcherOptions> = {}): {
  dispatcher: OnboardingDispatcher;
  outcomes: OnboardingStartOutcome[];
} {
  const outcomes: OnboardingStartOutcome[] = [];
  const created = createOnboardingDispatcher({
    database: stack.database,
    temporal: stack.temporal,
    taskQueue: stack.taskQueue,
    logger: createLogger({ level: 'silent' }),
    metrics: { onboardingStart: (outcome) => outcomes.push(outcome) },
    ...overrides,
  });
  dispatchers.push(created);
  return { dispatcher: created, outcomes };
}

/**
 * What the session URL commits for a new user's tokens (session row and outbox row), and nothing else: no start, no
 * wake.
 */
async function committedSession(
  options: { user?: { userId: string; profileId: string }; taskQueue?: string } = {},
): Promise<{ id: string; profileId: string }> {
  const user = options.user ?? (await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' }));
  const tokens = await stack.admin.embeddedTokens(user.userId);
  const cipher = createTokenCipher(stack.encryptionKey);
  const id = randomUUID();
  await storeSessionForOnboarding(
    stack.database,
    {
      id,
      sessionIdHash: hashBearer(randomUUID()),
      requestReferenceNo: randomUUID(),
      accessTokenEncrypted: cipher.encrypt(tokens.accessToken, sessionAccessTokenContext(id)),
      refreshTokenEncrypted: cipher.encrypt(tokens.refreshToken, sessionRefreshTokenContext(id)),
      accessTokenExpiresAt: new Date(tokens.expiresAt * 1000),
      refreshTokenExpiresAt: jwtExpiry(tokens.refreshToken),
      expiresAt: new Date(Date.now() + 120_000),
    },
    options.taskQueue ?? stack.taskQueue,
  );
  return { id, profileId: user.profileId };
}

const outboxRow = (id: string) => stack.database.onboardingOutbox.findUnique({ where: { sessionId: id } });

/**
 * Every execution Temporal knows under the session's workflow id (visibility lags a little: read until it shows one).
 */
async function executionsOf(sessionRecordId: string): Promise<string[]> {
  const runs: string[] = [];
  for await (const execution of stack.temporal.workflow.list({
    query: `WorkflowId = '${onboardingWorkflowId(sessionRecordId)}'`,
  }))
    runs.push(execution.runId);
  return runs;
}

describe('session onboarding outbox', () => {
  it('a session committed with its pending marker but no workflow (the API died after the commit) is onboarded by the next sweep — never lost', async () => {
    const session = await committedSession();
    expect(await outboxRow(session.id)).toMatchObject({ taskQueue: stack.taskQueue, attempts: 0 });
    await expect(stack.temporal.workflow.getHandle(onboardingWorkflowId(session.id)).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );

    // A start that fails (Temporal unreachable) keeps the row, due again after a backoff.
    const unreachable = {
      workflow: { start: () => Promise.reject(new Error('14 UNAVAILABLE: connection refused')) },
    } as unknown as Client;
    const failing = dispatcher({ temporal: unreachable });
    expect(await failing.dispatcher.drain()).toEqual({ started: 0, failed: 1 });
    expect(failing.outcomes).toContain('failed');
    const kept = await outboxRow(session.id);
    expect(kept?.attempts).toBe(1);
    expect(kept!.dueAt.getTime()).toBeGreaterThan(Date.now());

    // The next API process: its start-up sweep (and the periodic one, once the backoff ends) starts it.
    const restarted = dispatcher({ sweepIntervalMs: 200 });
    restarted.dispatcher.start();
    const row = await waitUntil(
      () => stack.database.embeddedSession.findUniqueOrThrow({ where: { id: session.id } }),
      (current) => current.status !== 'PENDING',
    );
    expect(row).toMatchObject({ status: 'READY', linkId: expect.any(String) });
    expect(restarted.outcomes).toContain('started');
    expect(await outboxRow(session.id)).toBeNull();
    const link = await stack.database.link.findUniqueOrThrow({
      where: { profileId_kind: { profileId: session.profileId, kind: 'EMBEDDED' } },
    });
    expect(link.id).toBe(row.linkId);
    // Its periodic sweep would race the next tests' own dispatchers for their rows.
    await restarted.dispatcher.stop();
  });

  it('a repeated dispatch (two API copies at once, a row left behind after its start) starts one onboarding', async () => {
    const session = await committedSession();
    const first = dispatcher();
    const second = dispatcher();
    // Two copies drain at once: a claimed row is skipped by the other (SKIP LOCKED and the lease).
    await Promise.all([first.dispatcher.drain(), second.dispatcher.drain()]);
    expect(
      [...first.outcomes, ...second.outcomes].filter((outcome) => outcome === 'started').length,
    ).toBeGreaterThanOrEqual(1);
    expect(await outboxRow(session.id)).toBeNull();
    const handle = stack.temporal.workflow.getHandle(onboardingWorkflowId(session.id));
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'READY' });
    const { runId } = await handle.describe();

    // A dispatcher that died after the start but before deleting the row leaves it behind: the
    // next dispatch finds the closed run (REJECT_DUPLICATE), counts it started and clears the row.
    await stack.database.onboardingOutbox.create({ data: { sessionId: session.id, taskQueue: stack.taskQueue } });
    const again = dispatcher();
    expect(await again.dispatcher.drain()).toEqual({ started: 1, failed: 0 });
    expect(again.outcomes).toEqual(['already_closed']);
    expect(await outboxRow(session.id)).toBeNull();
    // So does the landing page's expedite of a session that is no longer in the outbox: nothing to start.
    await again.dispatcher.expedite(session.id);
    expect(again.outcomes).toEqual(['already_closed']);

    expect((await handle.describe()).runId).toBe(runId);
    expect(
      await waitUntil(
        () => executionsOf(session.id),
        (runs) => runs.length > 0,
      ),
    ).toEqual([runId]);
    expect(await stack.database.link.count({ where: { profileId: session.profileId, kind: 'EMBEDDED' } })).toBe(1);
  });

  it('stops cleanly: no pass runs after stop(), a wake after it does nothing, and the row waits for the next process', async () => {
    const session = await committedSession();
    const stopped = dispatcher();
    stopped.dispatcher.start();
    await stopped.dispatcher.stop();
    const before = stopped.outcomes.length;
    stopped.dispatcher.wake();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stopped.outcomes.length).toBe(before);
    // Whatever the first sweep did before the stop, the row is either started or still waiting: never dropped.
    const row = await outboxRow(session.id);
    if (row) expect(await dispatcher().dispatcher.drain()).toMatchObject({ started: expect.any(Number) });
    expect(await outboxRow(session.id)).toBeNull();
    expect((await stack.temporal.workflow.getHandle(onboardingWorkflowId(session.id)).result()).status).toBe('READY');
  });
});

describe('a try at onboarding that outlives its turn', () => {
  /**
   * The session's onboarding as its activity runs it, with a profile call that waits to be let through (a try that
   * took longer than its activity: the activity's retry, or the run, went on meanwhile). Sessions of a queue no
   * dispatcher takes, so only this try onboards them.
   */
  function heldOnboarding(at: 'before' | 'after' = 'before') {
    let letThrough = () => undefined as void;
    const held = new Promise<void>((resolve) => (letThrough = resolve));
    let reached = () => undefined as void;
    const atTheWallet = new Promise<void>((resolve) => (reached = resolve));
    const onboarding = createSessionOnboarding({
      database: stack.database,
      tokens: stack.tokens,
      cipher: createTokenCipher(stack.encryptionKey),
      logger: createLogger({ level: 'silent' }),
      refreshPool: stack.refreshPool,
      wallet: {
        getProfile: async (token) => {
          if (at === 'after') {
            const read = await stack.wallet.getProfile(token);
            reached();
            await held;
            return read;
          }
          reached();
          await held;
          return stack.wallet.getProfile(token);
        },
        refreshEmbedded: (token) => stack.wallet.refreshEmbedded(token),
      },
    });
    return { onboarding, atTheWallet, letThrough };
  }
  const nobodysQueue = 'onboarding-outbox-test-nobody';

  it('links nothing for a session that ended FAILED meanwhile: the session and the links agree', async () => {
    // Found by a read: the session was read PENDING outside any transaction, and the link saved after the profile call
    // in one of its own: a late try made an ACTIVE link for a session its workflow had reported FAILED.
    const session = await committedSession({ taskQueue: nobodysQueue });
    const { onboarding, atTheWallet, letThrough } = heldOnboarding();
    const linking = onboarding.link(session.id);
    await atTheWallet;
    await onboarding.fail(session.id, 'ONBOARDING_TIMED_OUT');
    letThrough();
    expect(await linking).toMatchObject({ kind: 'done', result: { status: 'FAILED', linkId: null } });
    expect(await stack.database.link.count({ where: { profileId: session.profileId } })).toBe(0);
  });

  it('links the pair another try refreshed while this one read the profile, never the pair that refresh made dead', async () => {
    // Found by the second read of the onboarding's refresh: the link took the pair this try read at its start; another
    // try that met a 401 meanwhile had refreshed it (the old pair dead), and the link's first use went REAUTH_REQUIRED.
    const session = await committedSession({ taskQueue: nobodysQueue });
    const { onboarding, atTheWallet, letThrough } = heldOnboarding('after');
    const linking = onboarding.link(session.id);
    await atTheWallet;
    // The other try's refresh: the row's pair rotated (as links/embedded-onboarding.ts stores it).
    const cipher = createTokenCipher(stack.encryptionKey);
    const row = await stack.database.embeddedSession.findUniqueOrThrow({ where: { id: session.id } });
    const rotated = await stack.wallet.refreshEmbedded(
      cipher.decrypt(row.refreshTokenEncrypted!, sessionRefreshTokenContext(session.id)),
    );
    await stack.database.embeddedSession.update({
      where: { id: session.id },
      data: {
        accessTokenEncrypted: cipher.encrypt(rotated.data.accessToken, sessionAccessTokenContext(session.id)),
        refreshTokenEncrypted: cipher.encrypt(rotated.data.refreshToken, sessionRefreshTokenContext(session.id)),
        accessTokenExpiresAt: rotated.data.expiresAt,
      },
    });
    letThrough();
    const linked = await linking;
    expect(linked).toMatchObject({ kind: 'done', result: { status: 'READY' } });
    const linkId = linked.kind === 'done' ? linked.result.linkId : null;
    // The link works: its pair is the live one (before: the dead one, and the read ended REAUTH_REQUIRED).
    const profile = await stack.opsFetch(`/ops/links/${linkId}/profile`);
    expect(profile.status).toBe(200);
  });

  it('leaves a link unlinked after its session was stored unlinked: an older login never undoes a revoke', async () => {
    // Found by a read: the link was saved ACTIVE whatever happened since the session was stored, so a try finishing
    // after ops revoked the link (for a stolen phone, say) gave it its tokens back.
    const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
    const session = await committedSession({ user, taskQueue: nobodysQueue });
    const { onboarding, atTheWallet, letThrough } = heldOnboarding();
    const linking = onboarding.link(session.id);
    await atTheWallet;
    expect(await unlink(stack.database, stack.tokens, linkId, 'ops-on-call')).toBe(true);
    letThrough();
    expect(await linking).toMatchObject({ kind: 'done', result: { status: 'FAILED', errorCode: 'LINK_UNLINKED' } });
    expect(await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).toMatchObject({
      status: 'UNLINKED',
    });
    expect(await stack.database.tokenSet.count({ where: { linkId } })).toBe(0);
    // The user's own next session (stored after the revoke) links again.
    const again = await committedSession({ user, taskQueue: nobodysQueue });
    const next = heldOnboarding();
    next.letThrough();
    expect(await next.onboarding.link(again.id)).toMatchObject({ kind: 'done', result: { status: 'READY', linkId } });
  });
});
