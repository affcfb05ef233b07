// The sweep (reconcileFundings) on real infrastructure: fundings whose workflow can
// no longer finish them are repaired from the wallet's own record, a funding that never got its
// workflow gets one, a running workflow is left alone, and payments in review are listed.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { cashInCodeContext } from '../../fundings/funding-record.ts';
import type { SweepReport } from '../../workflows/sweep.contract.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { MAX_SWEEP_LISTED, startSweep } from '../../workflows/sweep.contract.ts';
import { LANE_COUNT, laneWorkflowId } from '../../workflows/fund-lane.contract.ts';
import { batchRecordsOn, codeItems } from '../support/batch-records.ts';
import { createLedger } from '../../ledger/ledger.ts';
import { createSweepMarks } from '../../fundings/sweep-marks.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { nodeArgsFor } from '../support/node-entry.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
const anHourAgo = () => new Date(Date.now() - 3_600_000);

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
});
afterAll(async () => {
  await stack.admin.settings({ processingDelayMs: 0 }).catch(() => undefined);
  await stack.close();
});

async function insertFunding(fields: {
  status: 'PENDING' | 'CREATING' | 'EXECUTING' | 'NEEDS_REVIEW' | 'FAILED';
  code: string;
  transferId: string | null;
  updatedAt?: Date;
}) {
  const id = randomUUID();
  const cipher = createTokenCipher(stack.encryptionKey);
  await stack.database.funding.create({
    data: {
      id,
      idempotencyKey: `sweep-${id}`,
      requestFingerprint: '0'.repeat(64),
      workflowId: `funding-sweep-test-${id}`,
      status: fields.status,
      recipientType: 'CODE',
      cashInCodeEncrypted: cipher.encrypt(fields.code, cashInCodeContext(id)),
      cashInCodeMasked: `*****${fields.code.slice(-2)}`,
      currency: 'PHP',
      amount: new Prisma.Decimal('12.00'),
      transferId: fields.transferId,
      // Its owner (a workflow, a pass) was last seen an hour ago: the sweep's to look at.
      createdAt: anHourAgo(),
      ownerSeenAt: anHourAgo(),
      ...(fields.status === 'NEEDS_REVIEW' ? { reviewReason: 'an execute outcome stayed unknown' } : {}),
    },
  });
  return id;
}

async function codeOfNewUser() {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  return { user, code: (await stack.admin.cashInCode(user.userId)).code };
}

const sweep = async (olderThanSeconds = 600, limit?: number) =>
  (
    await startSweep(stack.temporal, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-test-${randomUUID()}`,
      input: { olderThanSeconds, ...(limit === undefined ? {} : { limit }) },
    })
  ).result();

/** The worker's activities on this file's stack, as a worker of it builds them (`extra`: a sweep's options). */
const activitiesOfStack = (extra: Parameters<typeof stackActivities>[1] = {}) => stackActivities(stack, extra);

describe('the sweep', () => {
  it('repairs, starts, skips and lists what it should', async () => {
    // a. Its workflow is gone, and the wallet executed the transfer: finish it from the wallet.
    const executed = await codeOfNewUser();
    const approvedTransfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: executed.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    await stack.wallet.executeTransfer(approvedTransfer.data.transferId);
    const a = await insertFunding({
      status: 'EXECUTING',
      code: executed.code,
      transferId: approvedTransfer.data.transferId,
    });

    // b. Its workflow is gone after an execute may have been sent, and the transfer still shows
    // CREATED: an execute may still be queued at the wallet, so review, never FAILED.
    const unexecuted = await codeOfNewUser();
    const createdTransfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: unexecuted.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const b = await insertFunding({
      status: 'EXECUTING',
      code: unexecuted.code,
      transferId: createdTransfer.data.transferId,
    });

    // b2. Its workflow is gone before any execute was sent (CREATING): FAILED, nothing moved.
    const neverSent = await codeOfNewUser();
    const neverSentTransfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: neverSent.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const b2 = await insertFunding({
      status: 'CREATING',
      code: neverSent.code,
      transferId: neverSentTransfer.data.transferId,
    });

    // f. In review, with no workflow left, and the queued execute has landed: the wallet's final state resolves it.
    const landed = await codeOfNewUser();
    const landedTransfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: landed.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    await stack.wallet.executeTransfer(landedTransfer.data.transferId);
    const f = await insertFunding({
      status: 'NEEDS_REVIEW',
      code: landed.code,
      transferId: landedTransfer.data.transferId,
    });

    // g. FAILED recently, yet the wallet shows its transfer executed: reported, never silently left.
    const contradicted = await codeOfNewUser();
    const contradictedTransfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: contradicted.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    await stack.wallet.executeTransfer(contradictedTransfer.data.transferId);
    const g = await insertFunding({
      status: 'FAILED',
      code: contradicted.code,
      transferId: contradictedTransfer.data.transferId,
    });

    // c. Stored, but its workflow was never started (the API died in between): start it.
    const orphan = await codeOfNewUser();
    const c = await insertFunding({ status: 'PENDING', code: orphan.code, transferId: null });

    // e. A payment parked in NEEDS_REVIEW.
    const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '50.00' });
    const e = randomUUID();
    await stack.database.payment.create({
      data: {
        id: e,
        idempotencyKey: `review-${e}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `payment-review-${e}`,
        status: 'NEEDS_REVIEW',
        linkId,
        currency: 'PHP',
        amount: new Prisma.Decimal('5.00'),
        reviewReason: 'the execute outcome stayed unknown after 4 attempts',
        walletPaymentId: `wallet-${e}`,
      },
    });

    // h. A payment stored in EXECUTING whose workflow never ran: a run resumes it.
    const { linkId: payerLinkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '50.00' });
    const h = randomUUID();
    await stack.database.payment.create({
      data: {
        id: h,
        idempotencyKey: `resume-${h}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `payment-resume-${h}`,
        status: 'PENDING',
        linkId: payerLinkId,
        currency: 'PHP',
        amount: new Prisma.Decimal('5.00'),
        createdAt: anHourAgo(),
      },
    });

    // One row a page: the sweep pages through every candidate, the newest too.
    const report = await sweep(600, 1);
    const action = (id: string) => report.items.find((item) => item.fundingId === id)?.action;
    expect(action(a)).toBe('finished-from-wallet');
    expect(action(b)).toBe('sent-to-review');
    expect(action(b2)).toBe('failed-not-executed');
    expect(action(c)).toBe('workflow-started');
    expect(action(f)).toBe('resolved-from-wallet');
    expect(report.paymentItems?.find((item) => item.id === h)?.action).toBe('workflow-started');
    expect(report.repaired).toBeGreaterThanOrEqual(6);
    expect(report.paymentsNeedingReview.map((payment) => payment.id)).toContain(e);
    // Each entry keeps the names the previous release's report gave (360981c: id, paymentId, since, reason), beside
    // today's: a script reading `walletflow sweep --json` goes on across the upgrade, whichever build ran the sweep.
    // Before: paymentId was renamed walletPaymentId, and read null once the new build was promoted.
    expect(report.paymentsNeedingReview.find((payment) => payment.id === e)).toEqual({
      id: e,
      paymentId: `wallet-${e}`,
      walletPaymentId: `wallet-${e}`,
      since: expect.any(String),
      reason: 'the execute outcome stayed unknown after 4 attempts',
    });
    expect(report.failedButExecuted?.map((item) => item.fundingId)).toContain(g);
    expect(report.fundingsNeedingReview?.map((item) => item.fundingId)).toContain(b);

    const rowF = await stack.database.funding.findUniqueOrThrow({ where: { id: f } });
    expect(rowF).toMatchObject({ status: 'APPROVED', resolvedBy: 'reconciliation', resolvedOutcome: 'APPROVED' });
    expect((await stack.database.funding.findUniqueOrThrow({ where: { id: b2 } })).status).toBe('FAILED');
    expect((await stack.database.funding.findUniqueOrThrow({ where: { id: g } })).status).toBe('FAILED');

    const rowA = await stack.database.funding.findUniqueOrThrow({ where: { id: a }, include: { events: true } });
    expect(rowA.status).toBe('APPROVED');
    expect(rowA.events.at(-1)?.detail).toMatch(/reconciliation/);
    expect(rowA.events.at(-1)?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
    const rowB = await stack.database.funding.findUniqueOrThrow({ where: { id: b } });
    expect(rowB).toMatchObject({ status: 'NEEDS_REVIEW', errorCode: null });
    expect(rowB.reviewReason).toMatch(/CREATED/);
    const ledger = await stack.admin.ledger();
    expect(
      ledger.transfers.find((transfer) => transfer.transferId === createdTransfer.data.transferId)?.executions,
    ).toBe(0);

    // c's workflow runs to the end on its own.
    const until = Date.now() + 30_000;
    let rowC = await stack.database.funding.findUniqueOrThrow({ where: { id: c } });
    while (rowC.status !== 'APPROVED' && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      rowC = await stack.database.funding.findUniqueOrThrow({ where: { id: c } });
    }
    expect(rowC.status).toBe('APPROVED');

    // d. A workflow still at work (a long PROCESSING): left alone.
    await stack.admin.settings({ processingDelayMs: 600_000 });
    const slow = await codeOfNewUser();
    const slowStart = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        recipient: { type: 'CODE', code: slow.code },
        amount: { currency: 'PHP', value: '3.00' },
      }),
    });
    const d = ((await slowStart.json()) as { fundingId: string }).fundingId;
    const deadline = Date.now() + 20_000;
    while ((await stack.database.funding.findUniqueOrThrow({ where: { id: d } })).status !== 'EXECUTING') {
      if (Date.now() > deadline) throw new Error('funding d never reached EXECUTING');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await stack.database.funding.update({
      where: { id: d },
      data: { createdAt: anHourAgo(), ownerSeenAt: anHourAgo() },
    });

    // A second sweep leaves a workflow at work alone, and repairs nothing twice.
    const again = await sweep();
    // Left to its workflow: counted, not listed (the report lists what the sweep acted on), and untouched.
    expect(again.counts?.fundings['workflow-running']).toBeGreaterThanOrEqual(1);
    expect(again.items.find((item) => item.fundingId === d)).toBeUndefined();
    expect((await stack.database.funding.findUniqueOrThrow({ where: { id: d } })).status).toBe('EXECUTING');
    expect(again.items.find((item) => item.fundingId === a)).toBeUndefined();
    await stack.admin.settings({ processingDelayMs: 0 });
  }, 180_000);

  /** `walletflow sweep --json` as an operator runs it, against this stack's Temporal, with `env` beside. */
  const runSweepCli = (env: NodeJS.ProcessEnv = {}) =>
    promisify(execFile)(process.execPath, [...nodeArgsFor('cli/main.ts'), 'sweep', '--older-than', '600', '--json'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        TEMPORAL_TASK_QUEUE: stack.taskQueue,
        ...env,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('walletflow sweep runs a sweep now and prints the report', async () => {
    // Asynchronously: this process's own worker runs the sweep while the CLI waits for it.
    const result = await runSweepCli();
    const report = JSON.parse(result.stdout) as SweepReport;
    expect(report).toMatchObject({ checked: expect.any(Number), repaired: expect.any(Number) });
    expect(Array.isArray(report.paymentsNeedingReview)).toBe(true);
  });

  it('walletflow sweep reaches Temporal as the configuration says: with TLS asked for, never in the clear', async () => {
    // Found by a read: the command connected without TEMPORAL_TLS_* and TEMPORAL_API_KEY, as no other process does: a
    // secured Temporal refused it, or it sent its workflow's id and search attributes in the clear. Here a plain
    // server: a TLS handshake with it fails, and the command says so (exit 3) rather than sweeping in the clear.
    const refused = await runSweepCli({ TEMPORAL_TLS: 'true' }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('walletflow sweep: Temporal is not reachable at');
  });

  it('the sweep runs with a heartbeat time-out, so a hung attempt is cut in seconds, not after 5 minutes', async () => {
    const workflowId = `sweep-test-${randomUUID()}`;
    const handle = await startSweep(stack.temporal, {
      taskQueue: stack.taskQueue,
      workflowId,
      input: { olderThanSeconds: 600 },
    });
    await handle.result();
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find(
      (event) => event.activityTaskScheduledEventAttributes,
    )?.activityTaskScheduledEventAttributes;
    const heartbeatSeconds = Number(scheduled?.heartbeatTimeout?.seconds ?? 0);
    expect(heartbeatSeconds).toBeGreaterThan(0);
    expect(heartbeatSeconds).toBeLessThanOrEqual(60);
  });

  it('an attempt that Temporal cut off (its heartbeat answered cancelled) writes nothing more', async () => {
    const executed = await codeOfNewUser();
    const transfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: executed.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    await stack.wallet.executeTransfer(transfer.data.transferId);
    const id = await insertFunding({ status: 'EXECUTING', code: executed.code, transferId: transfer.data.transferId });
    const activities = activitiesOfStack();
    const environment = new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 });
    // The attempt's heartbeat timed out at the server: the worker cancels the attempt.
    environment.cancel();
    const outcome = await environment.run(activities.sweepStuckFundings, { olderThanSeconds: 600 }).then(
      () => 'completed',
      (error: unknown) => (error instanceof CancelledFailure ? 'cancelled' : error),
    );
    expect(outcome).toBe('cancelled');
    expect((await stack.database.funding.findUniqueOrThrow({ where: { id } })).status).toBe('EXECUTING');
    // Left for the next sweep, which owns it then.
    const report = await sweep();
    expect(report.items.find((item) => item.fundingId === id)).toMatchObject({ action: 'finished-from-wallet' });
  });
});

describe('the sweep’s reviews', () => {
  /** The retrieves of a transfer, answered or not, from the wallet call audit. */
  const retrievesOf = (transferId: string) =>
    stack.database.walletCall.count({
      where: { operation: 'transfers.retrieve', path: { endsWith: `/${transferId}` } },
    });
  /** A funding in review whose transfer was created and never executed (the wallet shows it CREATED). */
  async function inReview() {
    const { code } = await codeOfNewUser();
    const created = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const id = await insertFunding({ status: 'NEEDS_REVIEW', code, transferId: created.data.transferId });
    return { id, transferId: created.data.transferId };
  }

  /** The file's other fundings seen now: only those inserted after it are the sweep's to look at. */
  const onlyNewCandidates = () => stack.database.funding.updateMany({ data: { ownerSeenAt: new Date() } });

  it('a transfer the wallet cannot show now leaves its funding for a later sweep, and the sweep goes on to its report: after a 429 it asks nothing more, after a 5xx the next', async () => {
    await onlyNewCandidates();
    const older = await inReview();
    const newer = await inReview();
    const sweepUnder = async (mode: 'rate-limited' | 'error-before-effect') => {
      await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode, rate: 1 }]);
      try {
        // Before: the 429 or 5xx failed the sweep's attempt, each retry began again at the oldest funding, and the
        // run failed: the repairs after the pass (payments, holds, batches, lanes) never ran.
        return await sweep();
      } finally {
        await stack.admin.setFaults([]);
      }
    };
    const report = await sweepUnder('rate-limited');
    // The older was asked, the newer not: after a 429 the wallet is asked nothing more in the pass.
    const olderAsked = await retrievesOf(older.transferId);
    expect(olderAsked).toBeGreaterThanOrEqual(1);
    expect(await retrievesOf(newer.transferId)).toBe(0);
    // Every funding in review is counted, asked or not.
    expect(report.counts?.fundingsNeedingReview).toBeGreaterThanOrEqual(2);
    // The next sweep, under a 5xx: the older, asked in vain, is seen and asked again after the others (a transfer the
    // wallet can never show must not stop every sweep's asking at it); the newer is asked; the sweep ends.
    expect(await sweepUnder('error-before-effect')).toMatchObject({ checked: expect.any(Number) });
    expect(await retrievesOf(older.transferId)).toBe(olderAsked);
    expect(await retrievesOf(newer.transferId)).toBeGreaterThanOrEqual(1);
    for (const { id } of [older, newer])
      expect(await stack.database.funding.findUnique({ where: { id } })).toMatchObject({ status: 'NEEDS_REVIEW' });
  }, 60_000);

  it('sends to review a funding whose workflow is gone after an unknown execute, when the wallet answers its retrieve off the contract', async () => {
    await onlyNewCandidates();
    const { code } = await codeOfNewUser();
    const created = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const id = await insertFunding({ status: 'EXECUTING', code, transferId: created.data.transferId });
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'altered-answer', rate: 1 }]);
    try {
      // Before: a transient failure, asked again every sweep for ever, never before a person.
      await sweep();
    } finally {
      await stack.admin.setFaults([]);
    }
    expect(await stack.database.funding.findUnique({ where: { id } })).toMatchObject({
      status: 'NEEDS_REVIEW',
      reviewReason: expect.stringContaining('TRANSFER_MISMATCH'),
    });
  }, 60_000);

  it('asks about reviews for the pass’s budget each sweep, each asked one seen: the next sweep asks those not asked yet', async () => {
    // A budget spent at the first review: one asked a sweep.
    const sweepOnce = () =>
      new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 }).run(
        activitiesOfStack({ sweepPassBudgetMs: 0 }).sweepStuckFundings,
        { olderThanSeconds: 600 },
      );
    await onlyNewCandidates();
    const first = await inReview();
    const second = await inReview();
    const report = (await sweepOnce()) as SweepReport;
    expect([await retrievesOf(first.transferId), await retrievesOf(second.transferId)]).toEqual([1, 0]);
    expect(report.counts?.fundingsNeedingReview).toBeGreaterThanOrEqual(2);
    // Before: every sweep asked the oldest again, and the second waited until the first was resolved.
    await sweepOnce();
    expect([await retrievesOf(first.transferId), await retrievesOf(second.transferId)]).toEqual([1, 1]);
  }, 60_000);
});

describe('the sweep’s FAILED re-checks', () => {
  /** The retrieves of a transfer the sweep made, answered or not, from the wallet call audit. */
  const retrievesOf = (transferId: string, outcome?: string) =>
    stack.database.walletCall.count({
      where: { operation: 'transfers.retrieve', path: { endsWith: `/${transferId}` }, ...(outcome ? { outcome } : {}) },
    });
  /** A FAILED funding whose transfer was created and never executed, finished `ago` ms before now. */
  async function failedWithTransfer(ago: number) {
    const { code } = await codeOfNewUser();
    const created = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const id = await insertFunding({ status: 'FAILED', code, transferId: created.data.transferId });
    await stack.database
      .$executeRaw`UPDATE funding SET updated_at = now() - ${ago} * interval '1 millisecond' WHERE id = ${id}::uuid`;
    return created.data.transferId;
  }

  it('asks the wallet about a FAILED funding in the sweeps after it failed, not in every sweep of its day', async () => {
    // From a sweep that has not run before (its passes' marks gone).
    await stack.database.sweepMark.deleteMany();
    // Failed two hours ago: past the hour a pass reads again before its mark.
    const transferId = await failedWithTransfer(2 * 3_600_000);
    await sweep();
    expect(await retrievesOf(transferId)).toBe(1);
    // Before: every sweep of the 24 hours after it failed asked again (288 a day, each FAILED funding of the day).
    await sweep();
    await sweep();
    expect(await retrievesOf(transferId)).toBe(1);
  });

  it('one the wallet cannot answer now (429) is asked again next sweep, and the sweep goes on with the rest', async () => {
    const transferId = await failedWithTransfer(0);
    const asked = new Date();
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'rate-limited', rate: 1 }]);
    let report: SweepReport;
    try {
      // Before: the 429 failed the sweep's attempt, which began again from its first candidate, and the passes after
      // this one (payments, holds, batches, lanes) never ran.
      report = await sweep();
    } finally {
      await stack.admin.setFaults([]);
    }
    expect(report).toMatchObject({ checked: expect.any(Number) });
    // Asked nothing after the wallet's first 429: of the FAILED fundings in the pass (this file's of the last hour, the
    // older ones first), one was asked. Before: each was, 429 after 429. (Counted among theirs only: workflows the
    // file's earlier sweeps started may retrieve transfers of their own meanwhile.)
    expect(await retrievesOf(transferId, 'ok')).toBe(0);
    const inThePass = await stack.database.funding.findMany({
      where: { status: 'FAILED', transferId: { not: null }, updatedAt: { gte: new Date(asked.getTime() - 3_600_000) } },
      select: { transferId: true },
    });
    expect(inThePass.length).toBeGreaterThanOrEqual(2);
    expect(
      await stack.database.walletCall.count({
        where: {
          operation: 'transfers.retrieve',
          httpStatus: 429,
          startedAt: { gte: asked },
          OR: inThePass.map((funding) => ({ path: { endsWith: `/${funding.transferId}` } })),
        },
      }),
    ).toBe(1);
    await sweep();
    expect(await retrievesOf(transferId, 'ok')).toBe(1);
  }, 60_000);

  it('an incident’s FAILED fundings are asked over several sweeps, oldest update first, each from where the last stopped: none twice in the round, none skipped', async () => {
    // Found by a read: each attempt asked every FAILED funding of the window from the first, in creation order; an
    // incident's thousands took more than the attempt's five minutes, every attempt began again, the mark never moved
    // and the repairs after the pass never ran. Here each sweep's budget is spent at once: a page of one a sweep.
    await stack.database.sweepMark.deleteMany();
    // Failed 23, 22 and 21 hours ago: the oldest of the file's FAILED fundings in the day the pass looks at.
    const transfers: string[] = [];
    for (const hours of [23, 22, 21]) transfers.push(await failedWithTransfer(hours * 3_600_000));
    const asked = async () => Promise.all(transfers.map((transferId) => retrievesOf(transferId)));
    const sweepOnce = () =>
      new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 }).run(
        activitiesOfStack({ sweepPassBudgetMs: 0 }).sweepStuckFundings,
        { olderThanSeconds: 600, limit: 1 },
      );
    await sweepOnce();
    expect(await asked()).toEqual([1, 0, 0]);
    const kept = await stack.database.sweepMark.findUnique({ where: { pass: 'failed-recheck' } });
    expect(kept).toMatchObject({ afterAt: expect.any(Date), afterKey: expect.any(String) });
    const afterTheFirst = new Date();
    await sweepOnce();
    expect(await asked()).toEqual([1, 1, 0]);
    await sweepOnce();
    expect(await asked()).toEqual([1, 1, 1]);
    // The file's other FAILED fundings, a sweep each, then the round is over: its mark moves and its position is gone.
    for (let sweeps = 0; sweeps < 50; sweeps += 1) {
      const mark = await stack.database.sweepMark.findUnique({ where: { pass: 'failed-recheck' } });
      if (mark && mark.afterAt === null) break;
      await sweepOnce();
    }
    const ended = await stack.database.sweepMark.findUnique({ where: { pass: 'failed-recheck' } });
    expect(ended).toMatchObject({ afterAt: null, afterKey: null, through: expect.any(Date) });
    // Its mark is when the round began, the first sweep's time, not the last's: a FAILED funding written late behind
    // the position (a host's clock behind the database's) is read again within the next round's margin (a second
    // read's finding: the mark was the last sweep's time, and a round of many sweeps left such a funding out for good).
    expect(ended!.through.getTime()).toBeLessThan(afterTheFirst.getTime());
    expect(await asked()).toEqual([1, 1, 1]);
  }, 120_000);

  it('keeps the oldest funding a round could not ask about, whichever of two overlapping attempts writes last', async () => {
    // Found by a read: both attempts of a round (a stale one still running beside its retry) pass the position's
    // guard, the round's mark, and the last write won: a stale attempt's later bound overwrote the retry's record of a
    // FAILED funding the wallet could not be asked about, so the round's mark moved past it, never asked again.
    await stack.database.sweepMark.deleteMany();
    const marks = createSweepMarks(stack.database);
    const round = new Date(Date.now() - 3_600_000);
    await marks.advance('failed-recheck', round, null);
    const unaskedAt = new Date(Date.now() - 50 * 60_000);
    const laterBound = new Date(Date.now() - 10 * 60_000);
    // The retry could not ask about a funding 50 minutes old; the stale attempt, which asked nothing, writes after it.
    await marks.keepRowPosition('failed-recheck', { at: unaskedAt, id: randomUUID() }, unaskedAt, round);
    await marks.keepRowPosition('failed-recheck', { at: laterBound, id: randomUUID() }, laterBound, round);
    expect((await marks.roundOf('failed-recheck')).unaskedSince?.getTime()).toBe(unaskedAt.getTime());
    // An attempt of an earlier round that ends late moves nothing and drops nothing: the round under way keeps its
    // position and the funding it could not ask about (found by a read: it cleared them, and the round started over).
    const earlier = new Date(round.getTime() - 3_600_000);
    await marks.advance('failed-recheck', new Date(), earlier);
    expect(await marks.roundOf('failed-recheck')).toMatchObject({
      through: round,
      afterRow: { at: laterBound },
      unaskedSince: unaskedAt,
    });
    // The round's own end, bound by a funding it could not ask about inside the read margin (older than its mark),
    // still moves the mark, by a millisecond: a round is known by the mark it began from, and the next must not share
    // it (found by a second read: the mark stayed, and a stale attempt of the round that ended passed for the next's).
    await marks.advance('failed-recheck', new Date(round.getTime() - 10 * 60_000), round);
    const next = await marks.roundOf('failed-recheck');
    expect(next).toMatchObject({ through: new Date(round.getTime() + 1), afterRow: null, unaskedSince: null });
    await marks.keepRowPosition('failed-recheck', { at: laterBound, id: randomUUID() }, laterBound, round);
    expect(await marks.roundOf('failed-recheck')).toMatchObject({ afterRow: null });
    await marks.keepRowPosition('failed-recheck', { at: laterBound, id: randomUUID() }, laterBound, next.through);
    await marks.advance('failed-recheck', new Date(), round);
    expect((await marks.roundOf('failed-recheck')).afterRow).toMatchObject({ at: laterBound });
    // The next round's own end, by the mark read back from the database, moves it and drops its position.
    const ended = new Date();
    await marks.advance('failed-recheck', ended, next.through);
    expect(await marks.roundOf('failed-recheck')).toMatchObject({ through: ended, afterRow: null });
    await stack.database.sweepMark.deleteMany();
  });
});

describe('the sweep’s pass over every hold', () => {
  const holdPass = () => stack.database.sweepMark.findUnique({ where: { pass: 'open-holds-full' } });

  it('the pass over every hold reads on, each sweep, from where the last one stopped; a hold a crash left open is settled once the pass reaches it, the ids a rolled-back batch burnt stepped over', async () => {
    // A day since the pass last went over every hold.
    await stack.database.sweepMark.deleteMany();
    const { credit } = batchRecordsOn(stack.database);
    const partnerUserId = `holds-${randomUUID()}`;
    await credit(partnerUserId, 100_000n);
    // The file's earlier transactions fit the pass's first range (50,000 ids) ...
    const [{ last }] = await stack.database.$queryRaw<[{ last: bigint }]>`
      SELECT coalesce(max(id), 0) AS last FROM ledger_transaction`;
    expect(last).toBeLessThan(50_000n);
    // ... and 120,000 ids no transaction took follow (a batch's store rolled back, or years of history).
    await stack.database.$executeRaw`
      SELECT setval(pg_get_serial_sequence('ledger_transaction', 'id'), ${last} + 120000)`;
    // Two FAILED fundings whose hold a crash (or a repair in SQL) left open, their rows last written two days ago: only
    // the pass over every hold finds them.
    const crashed: string[] = [];
    for (const code of ['1234567', '7654321']) {
      const id = await insertFunding({ status: 'FAILED', code, transferId: null });
      await stack.database.$transaction((tx) =>
        createLedger().hold(tx, {
          fundingId: id,
          source: { type: 'USER_BALANCE', partnerUserId },
          currency: 'PHP',
          amount: 12_000n,
        }),
      );
      await stack.database
        .$executeRaw`UPDATE funding SET updated_at = now() - interval '2 days' WHERE id = ${id}::uuid`;
      crashed.push(id);
    }
    const settled = () =>
      stack.database.ledgerTransaction.count({ where: { fundingId: { in: crashed }, kind: 'RELEASE' } });
    /** One attempt whose budget is spent at once, reading a page of one hold at a time: a page each sweep. */
    const sweepOnce = () =>
      new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 }).run(
        activitiesOfStack({ sweepPassBudgetMs: 0 }).sweepStuckFundings,
        { olderThanSeconds: 600, limit: 1 },
      );

    // The first range (the file's transactions, none a final funding's open hold): its position kept. Before, each
    // attempt read every range from the first (a ledger of years took more than its five minutes, every attempt began
    // again at the first hold: the pass never ended, and the repairs after it never ran).
    await sweepOnce();
    expect(await settled()).toBe(0);
    const first = await holdPass();
    expect(first?.afterId).toBeGreaterThan(last);
    // The next reads on from there, past the ids no transaction took, a page (one hold) a sweep, none skipped.
    await sweepOnce();
    expect(await settled()).toBe(1);
    await sweepOnce();
    expect(await settled()).toBe(2);
    expect((await holdPass())?.afterId).not.toBeNull();
    // Then the round is over: its mark moves, its position is cleared; not again until a day has passed.
    await sweepOnce();
    const ended = await holdPass();
    expect(ended?.afterId ?? null).toBeNull();
    expect(ended!.through.getTime()).toBeGreaterThan(Date.now() - 60_000);
    await sweepOnce();
    expect((await holdPass())?.afterId ?? null).toBeNull();
    // A sweep still on the round another has ended (one by hand beside the schedule's) keeps no position: the next
    // round would begin past the holds before it.
    await createSweepMarks(stack.database).keepPosition('open-holds-full', first!.afterId!, first!.through);
    expect((await holdPass())?.afterId ?? null).toBeNull();
  });
});

describe('the sweep during the upgrade from the previous release', () => {
  it('leaves alone a batch item a previous-release chunk claimed and is working on, and repairs it once that too is idle', async () => {
    // A batch of one item, stored two hours ago (no runner: the sweep's own checks of the item are what is tested).
    const { credit, insertBatch } = batchRecordsOn(stack.database);
    const partnerUserId = `upgrade-${randomUUID()}`;
    await credit(partnerUserId, 100_000n);
    const batchId = randomUUID();
    const { code } = await codeOfNewUser();
    const [item] = codeItems(batchId, 1, { reference: () => 'item-1', code: () => code, amount: 12_000n });
    const itemId = item!.id;
    await insertBatch(batchId, partnerUserId, [item!], null);
    // The previous release's chunk claimed it a moment ago, as its claim wrote it (360981c: status and updated_at, no
    // carrier, no owner_seen_at), on a row whose owner_seen_at the migration set to its store two hours before.
    await stack.database.$executeRaw`
      UPDATE funding SET status = 'CREATING', owner_fence = owner_fence + 1, updated_at = now(),
        owner_seen_at = now() - interval '2 hours', created_at = now() - interval '2 hours'
      WHERE id = ${itemId}::uuid`;
    const fence = async () =>
      (await stack.database.funding.findUniqueOrThrow({ where: { id: itemId }, select: { ownerFence: true } }))
        .ownerFence;
    const claimedBy = await fence();
    const working = await sweep();
    // Before: claimed (its fence raised under the old chunk) and its own workflow started beside the chunk.
    expect(working.items.find((item) => item.fundingId === itemId)).toBeUndefined();
    expect(await fence()).toBe(claimedBy);
    expect((await stack.database.funding.findUniqueOrThrow({ where: { id: itemId } })).status).toBe('CREATING');
    // The old worker stopped mid-chunk: nothing moved for longer than the sweep waits, and it is repaired.
    await stack.database
      .$executeRaw`UPDATE funding SET updated_at = now() - interval '1 hour' WHERE id = ${itemId}::uuid`;
    const idle = await sweep();
    expect(idle.items.find((item) => item.fundingId === itemId)?.action).toBe('workflow-started');
    expect(await fence()).toBeGreaterThan(claimedBy);
  });
});

describe('the sweep’s clock', () => {
  it('is the database’s: a worker whose clock runs two hours ahead leaves a funding whose owner was just seen alone', async () => {
    const executed = await codeOfNewUser();
    const transfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: executed.code },
      amount: { currency: 'PHP', value: '12.00' },
    });
    const id = await insertFunding({ status: 'EXECUTING', code: executed.code, transferId: transfer.data.transferId });
    // Its owner is seen now, by the database's clock (as a chunk's or a pass's heartbeat writes it).
    await stack.database.$executeRaw`UPDATE funding SET owner_seen_at = now() WHERE id = ${id}::uuid`;
    const { ownerFence } = await stack.database.funding.findUniqueOrThrow({ where: { id } });
    const activities = activitiesOfStack();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 3_600_000);
    let report: SweepReport;
    try {
      report = await new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 }).run(
        activities.sweepStuckFundings,
        { olderThanSeconds: 600 },
      );
    } finally {
      vi.useRealTimers();
    }
    expect(report.items.find((item) => item.fundingId === id)).toBeUndefined();
    expect(await stack.database.funding.findUniqueOrThrow({ where: { id } })).toMatchObject({
      status: 'EXECUTING',
      ownerFence,
    });
  });
});

describe('the sweep and the lanes', () => {
  it('starts a lane that is gone only on a build that is current: a sweep on another build leaves it to the current one', async () => {
    const lanes = Array.from({ length: LANE_COUNT }, (_, lane) =>
      stack.temporal.workflow.getHandle(laneWorkflowId(stack.taskQueue, lane)),
    );
    const ended = async () => {
      for (const lane of lanes) await lane.terminate('the sweep test').catch(() => undefined);
    };
    const running = async () =>
      (
        await Promise.all(
          lanes.map((lane) =>
            lane.describe().then(
              (run) => run.status.name,
              () => 'MISSING',
            ),
          ),
        )
      ).filter((status) => status === 'RUNNING').length;
    const sweep = (buildIsCurrent: boolean) =>
      new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 300_000 }).run(
        activitiesOfStack({ lanes: true, buildIsCurrent: async () => buildIsCurrent }).sweepStuckFundings,
        { olderThanSeconds: 600 },
      );
    await ended();
    try {
      // A ramped or not yet promoted build: its lanes would go to the current version's workers (the previous
      // release's have no fundLane, and failed every task): it starts none.
      await sweep(false);
      expect(await running()).toBe(0);
      await sweep(true);
      expect(await running()).toBe(LANE_COUNT);
    } finally {
      await ended();
    }
  });
});

describe('a lane that cannot work', () => {
  it('does not keep a funding waiting in it: one whose workflow task keeps failing is no working lane, and the sweep repairs the funding', async () => {
    const { code } = await codeOfNewUser();
    const id = await insertFunding({ status: 'PENDING', code, transferId: null });
    await stack.database.funding.update({ where: { id }, data: { lane: 0 } });
    // The lane's run is of a type this build's workers do not have (as after a rollback across a change to the lane):
    // open, and every workflow task of it fails. No contract names such a type: that is the point.
    // eslint-disable-next-line no-restricted-syntax
    const lane = await stack.temporal.workflow.start('fundLaneOfAnotherBuild', {
      taskQueue: stack.taskQueue,
      workflowId: laneWorkflowId(stack.taskQueue, 0),
      args: [],
    });
    try {
      await waitUntil(
        async () => Number((await lane.describe()).raw.pendingWorkflowTask?.attempt ?? 0),
        (attempt) => attempt >= 3,
        60_000,
        200,
      );
      const report = (await new MockActivityEnvironment({
        heartbeatTimeoutMs: 30_000,
        startToCloseTimeoutMs: 300_000,
      }).run(activitiesOfStack({ lanes: true, buildIsCurrent: async () => false }).sweepStuckFundings, {
        olderThanSeconds: 600,
      })) as SweepReport;
      expect(JSON.stringify(report)).not.toContain('waiting in its lane');
      // Handed to its own workflow, it left its lane in the sweep's claim: a lane that works again does not claim it
      // beside that run (found by a read: it kept lane 0, and each would have created an intent).
      expect(
        (await stack.database.funding.findUniqueOrThrow({ where: { id } })).lane,
        JSON.stringify(report),
      ).toBeNull();
      const status = await waitUntil(
        async () => (await stack.database.funding.findUniqueOrThrow({ where: { id } })).status,
        (now) => now === 'APPROVED',
        60_000,
        200,
      );
      expect(status).toBe('APPROVED');
    } finally {
      await lane.terminate('the sweep test').catch(() => undefined);
    }
  });
});

describe('the sweep at batch scale', () => {
  it('returns counts and a bounded sample, whatever it looked at: 10,000 fundings in review fit in its result', async () => {
    // 10,000 fundings in review with no transfer: each is looked at, left for ops and listed for
    // review. Listed one by one, the result would be about 2.7 MB: past Temporal's 2 MB payload limit.
    const count = 10_000;
    const cipher = createTokenCipher(stack.encryptionKey);
    const ids = Array.from({ length: count }, () => randomUUID());
    for (let start = 0; start < count; start += 2000) {
      await stack.database.funding.createMany({
        data: ids.slice(start, start + 2000).map((id) => ({
          id,
          idempotencyKey: `sweep-scale-${id}`,
          requestFingerprint: '0'.repeat(64),
          workflowId: `funding-sweep-scale-${id}`,
          status: 'NEEDS_REVIEW' as const,
          recipientType: 'CODE' as const,
          cashInCodeEncrypted: cipher.encrypt('1234567', cashInCodeContext(id)),
          cashInCodeMasked: '*****67',
          currency: 'PHP',
          amount: new Prisma.Decimal('1.00'),
          createdAt: anHourAgo(),
          ownerSeenAt: anHourAgo(),
          reviewReason: 'an execute outcome stayed unknown',
        })),
      });
    }
    try {
      const report = await sweep();
      const size = Buffer.byteLength(JSON.stringify(report));
      // Well under the 2 MB limit, and under Temporal's 512 KB warning: it does not grow with the day.
      expect(size, 'the report’s size in bytes').toBeLessThan(256 * 1024);
      expect(report.checked).toBeGreaterThanOrEqual(count);
      expect(report.counts?.fundings['left-for-ops']).toBeGreaterThanOrEqual(count);
      expect(report.counts?.fundingsNeedingReview).toBeGreaterThanOrEqual(count);
      expect(report.items.length).toBeLessThanOrEqual(MAX_SWEEP_LISTED);
      expect(report.fundingsNeedingReview?.length).toBeLessThanOrEqual(MAX_SWEEP_LISTED);
      expect(report.fundingsNeedingReview?.length).toBeGreaterThan(0);
    } finally {
      await stack.database.fundingEvent.deleteMany({ where: { fundingId: { in: ids } } });
      await stack.database.funding.deleteMany({ where: { id: { in: ids } } });
    }
  }, 240_000);
});
