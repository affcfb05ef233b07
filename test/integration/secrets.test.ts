// No secret in workflow history or logs: every funding and payment path runs (and a standalone
// login, and a refused refresh), with the API and worker logging at trace level; then every
// Temporal history of this stack's task queue (fetched through the client), every captured log
// line, the wallet call record and the timelines are scanned for the users' access and refresh
// tokens, the cash-in codes, the transfer API key, the client secret and the ops key.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { readableHistory } from '../support/replay-histories.ts';
import { loginThroughPages } from '../support/wallet-sandbox.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const logLines: string[] = [];
const secrets = new Set<string>();
const linkIds: string[] = [];

beforeAll(async () => {
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  stack = await startPartnerStack({ logTo: capture });
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

/**
 * Whether `text` holds `secret`. A cash-in code (digits only) counts as a whole token, not within a longer run of
 * letters and digits (a UUID's, a time's nanoseconds), and ids written as digits do not count: a history's task ids,
 * counted from 1,048,576 on the suite's shared Temporal server, can equal a code by chance (a full run failed on one).
 */
function holds(text: string, secret: string): boolean {
  if (!/^\d+$/.test(secret)) return text.includes(secret);
  const withoutIds = text.replace(/"(\w*(?:Id|Bytes))":"\d+"/g, '"$1":"#"');
  return new RegExp(`(?<![0-9A-Za-z])${secret}(?![0-9A-Za-z])`).test(withoutIds);
}

async function embeddedLink(balance = '100.00', kycLevel: 'KYC0' | 'KYC1' = 'KYC1', expired = false) {
  const { user, issued, linkId } = await createEmbeddedLink(stack, { kycLevel, balance }, { expired });
  secrets.add(issued.accessToken).add(issued.refreshToken);
  linkIds.push(linkId);
  return { user, linkId };
}

async function code(kycLevel: 'KYC0' | 'KYC1' = 'KYC1', blocked = false) {
  const user = await stack.admin.createUser({ kycLevel, balance: '0.00', ...(blocked ? { blocked: true } : {}) });
  const issued = await stack.admin.cashInCode(user.userId);
  secrets.add(issued.code);
  return issued.code;
}

async function post(path: string, body: unknown): Promise<string> {
  const response = await stack.opsFetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { fundingId?: string; id?: string };
  return answer.fundingId ?? answer.id ?? '';
}

async function settle(path: string, id: string, final: string[]) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const view = (await (await stack.opsFetch(`${path}/${id}`)).json()) as { status: string };
    if (final.includes(view.status)) return view;
    if (Date.now() > deadline) throw new Error(`${path}/${id} still ${view.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

const fundingFinal = ['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'];
const paymentFinal = ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'];
const amount = (value: string) => ({ currency: 'PHP', value });
/** JSON of database rows (their BigInt ids as strings). */
const json = (value: unknown) =>
  JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));

describe('secrets', () => {
  it('appear in no workflow history, log line, wallet call record or timeline', async () => {
    secrets.add(stack.sandbox.partner.transferApiKey).add(stack.sandbox.partner.clientSecret).add(stack.opsKey);

    // Fundings: CODE approved, M133, declined, unknown execute reconciled, cancelled; TOKEN with a refresh.
    const fundings: string[] = [];
    fundings.push(
      await post('/ops/fundings', { recipient: { type: 'CODE', code: await code() }, amount: amount('10.00') }),
    );
    fundings.push(
      await post('/ops/fundings', { recipient: { type: 'CODE', code: await code('KYC0') }, amount: amount('10.00') }),
    );
    fundings.push(
      await post('/ops/fundings', {
        recipient: { type: 'CODE', code: await code('KYC1', true) },
        amount: amount('10.00'),
      }),
    );
    fundings.push(
      await post('/ops/fundings', {
        recipient: { type: 'TOKEN', linkId: (await embeddedLink('0.00', 'KYC1', true)).linkId },
        amount: amount('10.00'),
      }),
    );
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    const reconciled = await post('/ops/fundings', {
      recipient: { type: 'CODE', code: await code() },
      amount: amount('10.00'),
    });
    await settle('/ops/fundings', reconciled, fundingFinal);
    await stack.admin.clearFaults();
    for (const id of fundings) await settle('/ops/fundings', id, fundingFinal);
    await stack.stopWorker();
    const cancelled = await post('/ops/fundings', {
      recipient: { type: 'CODE', code: await code() },
      amount: amount('10.00'),
    });
    await stack.opsFetch(`/ops/fundings/${cancelled}/cancel`, { method: 'POST' });
    await stack.startWorker();

    // Payments: succeeded, insufficient balance, unknown outcome parked and resolved.
    const payments: string[] = [];
    payments.push(
      await post('/ops/payments', { linkId: (await embeddedLink('100.00')).linkId, amount: amount('20.00') }),
    );
    payments.push(
      await post('/ops/payments', { linkId: (await embeddedLink('1.00')).linkId, amount: amount('20.00') }),
    );
    for (const id of payments) await settle('/ops/payments', id, paymentFinal);
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1 }]);
    const parked = await post('/ops/payments', {
      linkId: (await embeddedLink('100.00')).linkId,
      amount: amount('5.00'),
    });
    await settle('/ops/payments', parked, ['NEEDS_REVIEW']);
    await stack.admin.clearFaults();
    const resolved = await stack.opsFetch(`/ops/payments/${parked}/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'FAILED', note: 'no debit' }),
    });
    expect(resolved.status).toBe(200);

    // A standalone login (the code exchange) and a refused refresh.
    const user = await stack.admin.createUser({ password: 'pw-secrets' });
    const start = await stack.startLogin('secrets-user', user.mobile);
    const params = await loginThroughPages(stack.sandbox, start.location.toString(), 'pw-secrets');
    secrets.add(params.get('code')!);
    const callback = await fetch(`${stack.apiBase}/connect/callback?${params}`, { headers: { cookie: start.cookie } });
    expect(callback.status).toBe(200);
    linkIds.push(callback.headers.get('x-link-id')!);
    const expiring = await embeddedLink();
    await stack.admin.advanceClock(1300);
    await expect(
      stack.createVault({ now: () => Date.now() + 1_300_000 }).getAccessToken(expiring.linkId),
    ).rejects.toMatchObject({ code: 'REAUTH_REQUIRED' });
    await stack.admin.advanceClock(-1300).catch(() => undefined);

    // Every token walletflow ever held for these links (after refreshes) is a secret too.
    for (const linkId of linkIds) {
      const stored = await stack.tokens.read(stack.database, linkId);
      if (stored) secrets.add(stored.accessToken).add(stored.refreshToken);
    }
    const secretList = [...secrets].filter((secret) => secret.length >= 7);
    expect(secretList.length).toBeGreaterThan(20);

    // Temporal histories of everything this stack ran.
    const histories: string[] = [];
    for await (const execution of stack.temporal.workflow.list({ query: `TaskQueue = "${stack.taskQueue}"` })) {
      // Decoded: payload bytes serialise as byte maps, in which no secret could ever be found.
      const history = await stack.temporal.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      histories.push(readableHistory(JSON.parse(historyToJSON(history))));
    }
    expect(histories.length).toBeGreaterThanOrEqual(fundings.length + payments.length + 3);

    const records = json(await stack.database.walletCall.findMany());
    const timelines = json([
      await stack.database.fundingEvent.findMany(),
      await stack.database.paymentEvent.findMany(),
      await stack.database.linkEvent.findMany(),
      await stack.database.payment.findMany({
        select: { reviewEvidence: true, reviewReason: true, resolvedNote: true },
      }),
    ]);
    expect(logLines.length).toBeGreaterThan(5);
    const places: Array<[string, string]> = [
      ['workflow histories', histories.join('\n')],
      ['log lines', logLines.join('\n')],
      ['wallet call records', records],
      ['timelines', timelines],
    ];
    for (const [place, text] of places) {
      for (const secret of secretList) {
        expect(
          holds(text, secret),
          `a secret (${secret.slice(0, 4)}…, ${secret.length} chars) is in the ${place}`,
        ).toBe(false);
      }
    }
  }, 240_000);
});
