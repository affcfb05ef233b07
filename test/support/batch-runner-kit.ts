// What the batch runner's tests share (test/integration/batch-runner.test.ts, batch-chunk-owners.test.ts
// and batch-chunk-frozen-worker.test.ts), each file on a stack of its own (useBatchRunnerStack): a batch stored
// as the API stores one, its runner started, and what every batch must end with (each item final,
// every created transfer executed once, each hold settled as its item's state says).
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { createBatchRecord } from '../../fundings/batch-record.ts';
import { batchItemRows, createBatchItemsRecord, type NewBatchItem } from '../../fundings/batch-items-record.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { sha256Hex } from '../../lib/idempotency.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import {
  batchProgressQuery,
  batchStateChangedSignal,
  batchWorkflowId,
  startFundBatch,
  type BatchRunnerProgress,
  type FundBatchResult,
} from '../../workflows/fund-batch.contract.ts';
import { fundingWorkflowId } from '../../workflows/fund-wallet.contract.ts';
import { startPartnerStack, type PartnerStack } from './partner-stack.ts';

export type BatchRunnerKit = ReturnType<typeof batchRunnerKit>;

/**
 * The file's stack for the batch runner's tests: started with its in-process worker before the
 * file's tests, the sandbox's faults cleared after each, closed after all. The helpers reach the
 * stack when they are called, so a file takes them at its top.
 */
export function useBatchRunnerStack() {
  let started: { stack: PartnerStack; kit: BatchRunnerKit } | undefined;
  beforeAll(async () => {
    const stack = await startPartnerStack();
    started = { stack, kit: batchRunnerKit(stack) };
    await stack.startWorker();
  });
  afterEach(async () => {
    await started?.stack.admin.clearFaults();
  });
  afterAll(async () => {
    await started?.stack.close();
  });
  const kit = (): BatchRunnerKit => {
    if (!started) throw new Error('the batch runner stack is not started: call the helpers from a test');
    return started.kit;
  };
  return {
    stack: () => kit().stack,
    fundings: () => kit().fundings,
    batches: () => kit().batches,
    runningBatch: (...args: Parameters<BatchRunnerKit['runningBatch']>) => kit().runningBatch(...args),
    startRunner: (...args: Parameters<BatchRunnerKit['startRunner']>) => kit().startRunner(...args),
    resultOf: (handle: WorkflowHandle) => kit().resultOf(handle),
    progressOf: (handle: WorkflowHandle) => kit().progressOf(handle),
    signal: (handle: WorkflowHandle) => kit().signal(handle),
    itemsOf: (batchId: string) => kit().itemsOf(batchId),
    tally: (batchId: string) => kit().tally(batchId),
    expectSettled: (batchId: string) => kit().expectSettled(batchId),
  };
}

/** The helpers on `stack`. */
function batchRunnerKit(stack: PartnerStack) {
  const records = { database: stack.database, cipher: createTokenCipher(stack.encryptionKey) };
  const fundings = createFundingRecord(records);
  const batches = createBatchRecord({
    database: stack.database,
    fundings,
    batchItems: createBatchItemsRecord(records),
  });

  /**
   * A RUNNING batch (or one AWAITING_APPROVAL) of `count` items from the TREASURY, each to a fresh cash-in code, stored
   * as the API stores one.
   */
  async function runningBatch(
    count: number,
    options: { needsApproval?: boolean; recipient?: (userId: string) => void } = {},
  ): Promise<string> {
    const batchId = randomUUID();
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    options.recipient?.(user.userId);
    const items: NewBatchItem[] = [];
    for (let index = 1; index <= count; index += 1) {
      const { code } = await stack.admin.cashInCode(user.userId);
      const reference = `item-${index}`;
      const idempotencyKey = `batch:${batchId}:${reference}`;
      // 1.01, 1.02, …: each item's amount tells it apart in the wallet's ledger.
      items.push({
        id: randomUUID(),
        idempotencyKey,
        workflowId: fundingWorkflowId(idempotencyKey, sha256Hex),
        reference,
        recipient: { type: 'CODE', code },
        amount: 1000n + BigInt(index) * 10n,
      });
    }
    const inserted = await batches.insert({
      id: batchId,
      idempotencyKey: `batch-runner-${batchId}`,
      requestFingerprint: sha256Hex(batchId),
      workflowId: batchWorkflowId(batchId),
      name: `runner test ${count}`,
      currency: 'PHP',
      items: batchItemRows(items),
      createdBy: 'ops',
      // Always waits (0), or never (null).
      approvalThreshold: options.needsApproval ? 0n : null,
    });
    expect(inserted.stored).toBe(true);
    return batchId;
  }

  async function startRunner(
    batchId: string,
    options: { itemsPerRun: number; maxInFlight?: number },
  ): Promise<WorkflowHandle> {
    await startFundBatch(stack.temporal, {
      taskQueue: stack.taskQueue,
      input: { batchId, maxInFlight: options.maxInFlight ?? 4, itemsPerRun: options.itemsPerRun },
    });
    return stack.temporal.workflow.getHandle(batchWorkflowId(batchId));
  }

  const resultOf = (handle: WorkflowHandle) => handle.result() as Promise<FundBatchResult>;
  const progressOf = (handle: WorkflowHandle) => handle.query<BatchRunnerProgress>(batchProgressQuery);
  const signal = (handle: WorkflowHandle) => handle.signal(batchStateChangedSignal);

  const itemsOf = (batchId: string) =>
    stack.database.funding.findMany({
      where: { batchId },
      orderBy: { id: 'asc' },
      select: {
        id: true,
        status: true,
        errorCode: true,
        transferId: true,
        abandonedTransferIds: true,
        workflowId: true,
        createdAt: true,
      },
    });

  /** How many items are in each state (a batch-cancelled item apart, as the batch view counts it). */
  async function tally(batchId: string): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const row of await fundings.batchItemTally(batchId)) counts[row.status] = row.count;
    return counts;
  }

  /**
   * What every batch must end with: each item final, every created transfer executed exactly once
   * (an item not started created none), no intent abandoned, and each hold settled once, by a POST
   * when APPROVED and a RELEASE otherwise; the ledger's invariants hold for the batch's fundings.
   */
  async function expectSettled(batchId: string): Promise<Awaited<ReturnType<typeof itemsOf>>> {
    const rows = await itemsOf(batchId);
    const wallet = new Map((await stack.admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]));
    for (const row of rows) {
      expect(['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'], `item ${row.id}`).toContain(row.status);
      expect(row.abandonedTransferIds).toEqual([]);
      if (row.status === 'APPROVED') expect(wallet.get(row.transferId!)?.executions, `item ${row.id}`).toBe(1);
      if (row.errorCode === 'CANCELLED') expect(row.transferId).toBeNull();
    }
    const settlements = await stack.database.$queryRaw<
      Array<{ id: string; status: string; holds: bigint; settled: string[] }>
    >`
      SELECT f.id::text AS id, f.status::text AS status, COUNT(DISTINCT h.id)::bigint AS holds,
             COALESCE(array_agg(s.kind::text) FILTER (WHERE s.id IS NOT NULL), ARRAY[]::text[]) AS settled
      FROM funding f
      LEFT JOIN ledger_transaction h ON h.funding_id = f.id AND h.kind = 'HOLD'
      LEFT JOIN ledger_transaction s ON s.settles_id = h.id
      WHERE f.batch_id = ${batchId}::uuid GROUP BY f.id, f.status`;
    expect(settlements).toHaveLength(rows.length);
    for (const row of settlements) {
      expect(Number(row.holds), `hold of ${row.id}`).toBe(1);
      expect(row.settled, `settlement of ${row.id} (${row.status})`).toEqual([
        row.status === 'APPROVED' ? 'POST' : 'RELEASE',
      ]);
    }
    const ids = new Set(rows.map((row) => row.id));
    const report = await checkLedgerInvariants(stack.database);
    expect(report.violations.filter((violation) => [...ids].some((id) => violation.includes(id)))).toEqual([]);
    return rows;
  }

  return {
    stack,
    fundings,
    batches,
    runningBatch,
    startRunner,
    resultOf,
    progressOf,
    signal,
    itemsOf,
    tally,
    expectSettled,
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
