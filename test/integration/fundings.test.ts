// Fundings end to end on real infrastructure: the ops API starts fundWallet on Temporal, the
// worker's activities call the sandbox over HTTP, PostgreSQL keeps the record. Every path of the
// workflow, the idempotency rules of contract-decisions section 8, and the sandbox ledger as the
// witness of exactly-once. The lanes project runs this file again with FUNDING_LANES=always
// (vitest.config.ts): every promise holds whichever run carries the funding.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { findSecretLeaks } from '../support/replay-histories.ts';
import { startPartnerStack, suiteFundingLanes, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
/** Every funding joins a lane (the lanes project): its run carries it, no workflow of its own unless handed over. */
const laneCarried = suiteFundingLanes() === 'always';

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

async function postFunding(body: unknown, key: string = randomUUID()) {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as FundingView & { code?: string; detail?: string } };
}

async function getFunding(fundingId: string): Promise<FundingView> {
  const response = await stack.opsFetch(`/ops/fundings/${fundingId}`);
  expect(response.status).toBe(200);
  return (await response.json()) as FundingView;
}

async function waitFinal(fundingId: string, timeoutMs = 60_000): Promise<FundingView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const funding = await getFunding(fundingId);
    if (['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'].includes(funding.status)) return funding;
    if (Date.now() > deadline) throw new Error(`funding ${fundingId} still ${funding.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

const amount = (value: string) => ({ currency: 'PHP', value });

async function codeFor(options: { kycLevel?: 'KYC0' | 'KYC1'; blocked?: boolean } = {}) {
  const user = await stack.admin.createUser({
    kycLevel: options.kycLevel ?? 'KYC1',
    balance: '100.00',
    ...(options.blocked ? { blocked: true } : {}),
  });
  const { code } = await stack.admin.cashInCode(user.userId);
  return { user, code };
}

async function embeddedLinkFor(options: { expired?: boolean } = {}) {
  return createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' }, options);
}

async function ledgerTransfer(transferId: string | null) {
  const ledger = await stack.admin.ledger();
  return ledger.transfers.find((transfer) => transfer.transferId === transferId);
}

describe('funding paths', () => {
  it('CODE: approved, credited once, code masked everywhere', async () => {
    const { user, code } = await codeFor();
    const started = await postFunding({ recipient: { type: 'CODE', code }, amount: amount('100.50') });
    expect(started.status).toBe(202);
    expect(started.body.recipient).toEqual({ type: 'CODE', masked: `*****${code.slice(-2)}` });
    expect(JSON.stringify(started.body)).not.toContain(code);

    const funding = await waitFinal(started.body.fundingId);
    expect(funding).toMatchObject({ status: 'APPROVED', amount: { currency: 'PHP', value: '100.50' }, error: null });
    expect(funding.transferId).toEqual(expect.any(String));
    // The timeline: each status change, with the wallet call that caused it (create, then execute).
    expect(funding.events.map((event) => event.status)).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']);
    const [, , executing, approved] = funding.events;
    expect(executing?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
    expect(approved?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
    expect(approved?.requestReferenceNo).not.toBe(executing?.requestReferenceNo);
    const calls = await stack.database.walletCall.findMany({
      where: { requestReferenceNo: { in: [executing!.requestReferenceNo!, approved!.requestReferenceNo!] } },
      orderBy: { startedAt: 'asc' },
    });
    expect(calls.map((call) => call.operation)).toEqual(['transfers.create', 'transfers.execute']);
    expect((await ledgerTransfer(funding.transferId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('200.50');
    expect(JSON.stringify(funding)).not.toContain(code);
  });

  it('TOKEN: approved for a linked wallet', async () => {
    const { user, linkId } = await embeddedLinkFor();
    const started = await postFunding({ recipient: { type: 'TOKEN', linkId }, amount: amount('25.00') });
    expect(started.body.recipient).toEqual({ type: 'TOKEN', linkId });
    const funding = await waitFinal(started.body.fundingId);
    expect(funding.status).toBe('APPROVED');
    expect((await stack.admin.user(user.userId)).balance).toBe('25.00');
  });

  it('TOKEN: an expired user token is refreshed through the vault first', async () => {
    const { user, linkId } = await embeddedLinkFor({ expired: true });
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'TOKEN', linkId }, amount: amount('10.00') })).body.fundingId,
    );
    expect(funding.status).toBe('APPROVED');
    const refreshes = (await stack.admin.ledger()).refreshes.filter((refresh) => refresh.userId === user.userId);
    expect(refreshes).toHaveLength(1);
  });

  it('TOKEN: a link that needs a new login ends FAILED with REAUTH_REQUIRED', async () => {
    const { linkId } = await embeddedLinkFor();
    await stack.database.link.update({ where: { id: linkId }, data: { status: 'REAUTH_REQUIRED' } });
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'TOKEN', linkId }, amount: amount('10.00') })).body.fundingId,
    );
    expect(funding).toMatchObject({ status: 'FAILED', transferId: null, error: { code: 'REAUTH_REQUIRED' } });
  });

  it('M133: a wallet that is not upgraded is REJECTED with the upgrade guidance, nothing executed', async () => {
    const { code } = await codeFor({ kycLevel: 'KYC0' });
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('5.00') })).body.fundingId,
    );
    expect(funding.status).toBe('REJECTED');
    expect(funding.transferId).toBeNull();
    expect(funding.error?.code).toBe('M133');
    expect(funding.error?.message).toMatch(/upgrade/i);
    expect(funding.events.at(-1)?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a bad cash-in code is REJECTED with CODE_INVALID', async () => {
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'CODE', code: '0000000' }, amount: amount('5.00') })).body.fundingId,
    );
    expect(funding).toMatchObject({ status: 'REJECTED', error: { code: 'CODE_INVALID' } });
  });

  it('declined: a blocked recipient is DECLINED with its 60xx code, executed once', async () => {
    const { code } = await codeFor({ blocked: true });
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('5.00') })).body.fundingId,
    );
    expect(funding).toMatchObject({ status: 'DECLINED', error: { code: '6002' } });
    expect((await ledgerTransfer(funding.transferId))?.executions).toBe(1);
  });

  it('a second funding on a cash-in code another funding holds is DECLINED 6003 at its execute, executed once: never left in review', async () => {
    // Found by a read: the sandbox refused the second intent's execute with 400 CODE_INVALID, a create's refusal
    // (contract section 2), which the funding read as an execute of unknown outcome: it asked again four times, then
    // waited in review with its hold ("the outcome of 4 executes stayed unknown"). A declined execution is a 200.
    const { user, code } = await codeFor();
    await stack.admin.settings({ processingDelayMs: 4_000 });
    try {
      const first = (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('3.00') })).body.fundingId;
      // The first funding's transfer executing: it holds the code until it settles.
      const deadline = Date.now() + 30_000;
      while ((await ledgerTransfer((await getFunding(first)).transferId))?.status !== 'PROCESSING') {
        if (Date.now() > deadline) throw new Error('the first transfer never executed');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const second = await waitFinal(
        (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('4.00') })).body.fundingId,
      );
      expect(second).toMatchObject({
        status: 'DECLINED',
        error: { code: '6003', message: expect.stringMatching(/new code/) },
      });
      expect((await ledgerTransfer(second.transferId))?.executions).toBe(1);
      expect(await waitFinal(first)).toMatchObject({ status: 'APPROVED' });
    } finally {
      await stack.admin.settings({ processingDelayMs: 0 });
    }
    expect((await stack.admin.user(user.userId)).balance).toBe('103.00');
  });

  it('an execute with an unknown outcome is reconciled by retrieve, never a second intent', async () => {
    const { code } = await codeFor();
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    try {
      const funding = await waitFinal(
        (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('7.00') })).body.fundingId,
      );
      expect(funding.status).toBe('APPROVED');
      expect(funding.events.map((event) => event.status)).toContain('RECONCILING');
      const ledger = await stack.admin.ledger();
      const transfer = ledger.transfers.find((entry) => entry.transferId === funding.transferId);
      expect(transfer?.executions).toBe(1);
      const row = await stack.database.funding.findUniqueOrThrow({ where: { id: funding.fundingId } });
      expect(row.abandonedTransferIds).toEqual([]);
    } finally {
      await stack.admin.clearFaults();
    }
  });

  it('an execute answered 5xx whose body says TRANSFER_EXPIRED is an unknown outcome, read back: APPROVED as the wallet executed it, never FAILED with its hold released', async () => {
    const { code } = await codeFor();
    // A gateway that templates its errors in the service's shape: the execute took effect behind it.
    await stack.admin.setFaults([
      { endpoint: 'transfers.execute', mode: 'error-after-effect', status: 503, code: 'TRANSFER_EXPIRED', rate: 1 },
    ]);
    try {
      const funding = await waitFinal(
        (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('6.00') })).body.fundingId,
      );
      // Before: FAILED TRANSFER_EXPIRED ("nothing was moved"), its hold released, the user credited all the same.
      expect({ status: funding.status, error: funding.error }).toEqual({ status: 'APPROVED', error: null });
      expect(funding.events.map((event) => event.status)).toContain('RECONCILING');
      expect((await ledgerTransfer(funding.transferId))?.executions).toBe(1);
    } finally {
      await stack.admin.clearFaults();
    }
  });

  it('a create refused with 429 is tried again after its Retry-After, not the retry policy’s shorter backoff', async () => {
    const { code } = await codeFor();
    const since = new Date();
    await stack.admin.setFaults([
      { endpoint: 'transfers.create', mode: 'rate-limited', rate: 1, retryAfterSeconds: 3 },
    ]);
    const limited = () =>
      stack.database.walletCall.findMany({
        where: { operation: 'transfers.create', httpStatus: 429, startedAt: { gte: since } },
        orderBy: { startedAt: 'asc' },
      });
    let fundingId: string;
    try {
      fundingId = (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('4.00') })).body.fundingId;
      const deadline = Date.now() + 30_000;
      while ((await limited()).length < 2) {
        if (Date.now() > deadline) throw new Error('the create was not tried again after 429');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await stack.admin.clearFaults();
    }
    const [first, second] = await limited();
    // The activity's retry policy starts at 1 s; the wallet asked for 3.
    expect(second!.startedAt.getTime() - first!.startedAt.getTime()).toBeGreaterThanOrEqual(2900);
    const funding = await waitFinal(fundingId);
    expect(funding.status).toBe('APPROVED');
    expect((await ledgerTransfer(funding.transferId))?.executions).toBe(1);
  });

  it('PROCESSING is polled with durable timers until final', async () => {
    const { code } = await codeFor();
    await stack.admin.settings({ processingDelayMs: 1500 });
    try {
      const funding = await waitFinal(
        (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('3.00') })).body.fundingId,
      );
      expect(funding.status).toBe('APPROVED');
      // On a lane, the pass hands the funding over while PROCESSING: its own workflow reconciles it.
      expect(funding.events.map((event) => event.status)).toEqual([
        'PENDING',
        'CREATING',
        'EXECUTING',
        ...(laneCarried ? ['RECONCILING'] : []),
        'APPROVED',
      ]);
      const retrieves = await stack.database.walletCall.count({
        where: { operation: 'transfers.retrieve', path: { endsWith: `/transfers/${funding.transferId}` } },
      });
      expect(retrieves).toBeGreaterThanOrEqual(1);
      const approvedBy = await stack.database.walletCall.findFirst({
        where: { requestReferenceNo: funding.events.at(-1)!.requestReferenceNo! },
      });
      expect(approvedBy?.operation).toBe('transfers.retrieve');
    } finally {
      await stack.admin.settings({ processingDelayMs: 0 });
    }
  });

  it('cancel before execute ends FAILED/CANCELLED with nothing executed; after execute it is refused', async () => {
    await stack.stopWorker();
    const { code } = await codeFor();
    const started = await postFunding({ recipient: { type: 'CODE', code }, amount: amount('4.00') });
    const cancelled = await stack.opsFetch(`/ops/fundings/${started.body.fundingId}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ status: 'FAILED', error: { code: 'CANCELLED' } });
    await stack.startWorker();
    if (!laneCarried) {
      const handle = stack.temporal.workflow.getHandle(
        (await stack.database.funding.findUniqueOrThrow({ where: { id: started.body.fundingId } })).workflowId,
      );
      expect(await handle.result()).toMatchObject({ status: 'FAILED', errorCode: 'CANCELLED', transferId: null });
    }
    expect(
      (await stack.admin.ledger()).transfers.filter(
        (transfer) => transfer.executions > 0 && transfer.transferId === null,
      ),
    ).toEqual([]);

    const approved = await waitFinal(
      (await postFunding({ recipient: { type: 'CODE', code: (await codeFor()).code }, amount: amount('1.00') })).body
        .fundingId,
    );
    // On a lane, the lane carried a funding after the cancelled one: it left that one as it was.
    expect(await getFunding(started.body.fundingId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'CANCELLED' },
      transferId: null,
    });
    const refused = await stack.opsFetch(`/ops/fundings/${approved.fundingId}/cancel`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: 'FUNDING_NOT_CANCELLABLE' });
  });
});

describe('idempotency (contract-decisions section 8)', () => {
  it('a repeated key with the same body returns the same funding with 200', async () => {
    const { code } = await codeFor();
    const key = `same-${randomUUID()}`;
    const first = await postFunding({ recipient: { type: 'CODE', code }, amount: amount('2.00') }, key);
    const second = await postFunding({ recipient: { type: 'CODE', code }, amount: amount('2.0') }, key);
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect(second.body.fundingId).toBe(first.body.fundingId);
  });

  it('a repeated key with another body is refused with 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const { code } = await codeFor();
    const key = `other-${randomUUID()}`;
    await postFunding({ recipient: { type: 'CODE', code }, amount: amount('2.00') }, key);
    const reused = await postFunding({ recipient: { type: 'CODE', code }, amount: amount('3.00') }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Whatever another body would be refused for before the store: the key is what is wrong with it. Before: 422
    // CURRENCY_NOT_ACCEPTED and LINK_NOT_FOUND, as if the key were new.
    for (const other of [
      { recipient: { type: 'CODE', code }, amount: { currency: 'USD', value: '2.00' } },
      // A currency walletflow does not know at all: no fingerprint reads it (a second read found it answered 500).
      { recipient: { type: 'CODE', code }, amount: { currency: 'GBP', value: '2.00' } },
      { recipient: { type: 'TOKEN', linkId: randomUUID() }, amount: amount('2.00') },
    ]) {
      const answer = await postFunding(other, key);
      expect([answer.status, answer.body.code], JSON.stringify(other)).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    }
  });

  it('concurrent requests with one key make one funding and one workflow (none of its own on a lane)', async () => {
    const { code } = await codeFor();
    const key = `race-${randomUUID()}`;
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => postFunding({ recipient: { type: 'CODE', code }, amount: amount('6.00') }, key)),
    );
    const ids = new Set(answers.map((answer) => answer.body.fundingId));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(1);
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(1);
    const funding = await waitFinal([...ids][0]!);
    expect(funding.status).toBe('APPROVED');
    const row = await stack.database.funding.findUniqueOrThrow({ where: { idempotencyKey: key } });
    const runs: string[] = [];
    for await (const execution of stack.temporal.workflow.list({ query: `WorkflowId = "${row.workflowId}"` }))
      runs.push(execution.runId);
    expect(runs).toHaveLength(laneCarried ? 0 : 1);
    expect((await ledgerTransfer(funding.transferId))?.executions).toBe(1);
  });

  it('requires the Idempotency-Key header', async () => {
    const response = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ recipient: { type: 'CODE', code: '1234567' }, amount: amount('1.00') }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'IDEMPOTENCY_KEY_INVALID' });
  });

  it.each([
    [{ recipient: { type: 'CODE', code: '123456' }, amount: { currency: 'PHP', value: '1.00' } }, 'recipient.code'],
    [{ recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '1.005' } }, 'amount.value'],
    [{ recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: 1 } }, 'amount.value'],
    [{ recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '-1.00' } }, 'amount.value'],
    [{ recipient: { type: 'TOKEN', linkId: 'nope' }, amount: { currency: 'PHP', value: '1.00' } }, 'recipient.linkId'],
    [{ recipient: { type: 'WIRE' }, amount: { currency: 'PHP', value: '1.00' } }, 'recipient'],
    [{ recipient: { type: 'CODE', code: '1234567' } }, 'amount'],
  ])('refuses a malformed body %j with 400 naming %s, storing nothing', async (body, path) => {
    const key = `bad-${randomUUID()}`;
    const answer = await postFunding(body, key);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('VALIDATION_ERROR');
    expect(answer.body.detail).toContain(path);
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(0);
  });

  it('refuses an unknown link with 422 and stores nothing', async () => {
    const key = `nolink-${randomUUID()}`;
    const answer = await postFunding(
      { recipient: { type: 'TOKEN', linkId: randomUUID() }, amount: amount('1.00') },
      key,
    );
    expect(answer.status).toBe(422);
    expect(answer.body.code).toBe('LINK_NOT_FOUND');
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(0);
  });
});

describe('reading fundings', () => {
  it('lists by status with cursor pagination, newest first', async () => {
    for (let index = 0; index < 3; index += 1) {
      await waitFinal(
        (await postFunding({ recipient: { type: 'CODE', code: '0000000' }, amount: amount('1.00') })).body.fundingId,
      );
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({ status: 'REJECTED', limit: '2', ...(cursor ? { cursor } : {}) });
      const page = (await (await stack.opsFetch(`/ops/fundings?${query}`)).json()) as {
        items: FundingView[];
        nextCursor: string | null;
      };
      expect(page.items.length).toBeLessThanOrEqual(2);
      for (const item of page.items) expect(item.status).toBe('REJECTED');
      seen.push(...page.items.map((item) => item.fundingId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect((await stack.opsFetch('/ops/fundings?status=NOPE')).status).toBe(400);
    expect((await stack.opsFetch('/ops/fundings?cursor=garbage')).status).toBe(400);
    expect((await stack.opsFetch(`/ops/fundings/${randomUUID()}`)).status).toBe(404);
  });

  it('keeps the status search attribute current and no secret in the workflow history', async () => {
    const { code } = await codeFor();
    const funding = await waitFinal(
      (await postFunding({ recipient: { type: 'CODE', code }, amount: amount('8.00') })).body.fundingId,
    );
    const row = await stack.database.funding.findUniqueOrThrow({ where: { id: funding.fundingId } });
    // A single funding is in no batch.
    expect(funding).toMatchObject({ batchId: null, reference: null });
    const secrets = [
      { name: 'the cash-in code', value: code },
      { name: 'the transfer API key', value: stack.sandbox.partner.transferApiKey },
    ];
    if (laneCarried) {
      // No workflow of its own: the lane's run that carried it holds ids only.
      expect(funding.carriedBy?.workflowId).toBe(row.carriedBy);
      const lane = stack.temporal.workflow.getHandle(row.carriedBy!, row.carriedByRunId!);
      expect(findSecretLeaks(JSON.parse(historyToJSON(await lane.fetchHistory())) as unknown, secrets)).toEqual([]);
      return;
    }
    const deadline = Date.now() + 20_000;
    let found = false;
    while (!found && Date.now() < deadline) {
      for await (const execution of stack.temporal.workflow.list({
        query: `WorkflowId = "${row.workflowId}" AND WalletflowStatus = "APPROVED" AND WalletflowRecipientType = "CODE"`,
      })) {
        found = found || execution.workflowId === row.workflowId;
      }
      if (!found) await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(found).toBe(true);
    const history = JSON.parse(
      historyToJSON(await stack.temporal.workflow.getHandle(row.workflowId).fetchHistory()),
    ) as unknown;
    expect(findSecretLeaks(history, secrets)).toEqual([]);
  });
});
