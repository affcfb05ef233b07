// Funding batches as a service for the ops API (contract-decisions section 14): create one from a
// JSON body or a CSV file (every row checked before anything is stored; the total held; idempotent
// on its key), approve or reject it (a second key), pause, resume and cancel it, and read it, its
// items and its report. The batch's rows change only through the batch record, its items' through
// the funding record; the runner is the fundBatch workflow, reached through its contract.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  checkBatchItems,
  createBatchFrameSchema,
  readBatchCsv,
  type BatchItemStatus,
  type BatchItemView,
  type BatchRowError,
  type BatchState,
  type BatchView,
} from '../domain/funding-batch.ts';
import type { FundingRefusalCode, FundingSource } from '../domain/ledger.ts';
import { amountOf, fromNumeric, normaliseAmount } from '../domain/money.ts';
import { sameActor } from '../domain/actor.ts';
import type { Database } from '../lib/database.ts';
import { requestFingerprint, sha256Hex } from '../lib/idempotency.ts';
import type { Logger } from '../lib/logger.ts';
import { InsufficientFundsError } from '../ledger/ledger.ts';
import { LimitRefusal, type FundingLimits } from '../ledger/limits.ts';
import { batchStateChangedSignal, batchWorkflowId, startFundBatch } from '../workflows/fund-batch.contract.ts';
import { fundingWorkflowId } from '../workflows/fund-wallet.contract.ts';
import { createBatchRecord, type InsertedBatch } from './batch-record.ts';
import type { FundingRecord, NewBatchItem } from './funding-record.ts';

export interface BatchServiceDependencies {
  database: Database;
  fundings: FundingRecord;
  temporal: Client;
  taskQueue: string;
  fingerprintKey: Buffer;
  logger: Logger;
  limits?: FundingLimits;
  /** BATCH_APPROVAL_THRESHOLD (thousandths); null: no batch waits for approval. */
  approvalThreshold: bigint | null;
  /** BATCH_MAX_IN_FLIGHT. */
  maxInFlight: number;
}

/** A batch request as it arrived: a JSON body, or a CSV file with its name from the query. */
export type BatchRequest = { kind: 'json'; body: unknown } | { kind: 'csv'; text: string; name: unknown; source?: FundingSource };

export type CreateBatchResult =
  | { kind: 'created'; batch: BatchView }
  | { kind: 'existing'; batch: BatchView }
  | { kind: 'key-reused' }
  /** 422 BATCH_INVALID: what is wrong with which rows (row 0: the request or the file itself). */
  | { kind: 'invalid'; errors: BatchRowError[]; errorCount: number }
  | { kind: 'refused'; code: FundingRefusalCode; detail: string };

export type MoveBatchResult =
  | { kind: 'moved'; batch: BatchView }
  | { kind: 'not-found' }
  | { kind: 'same-approver' }
  | { kind: 'wrong-state'; state: BatchState };

/** The CSV file's currency: sandbox and partner wallets hold PHP. */
const CSV_CURRENCY = 'PHP';

export function createBatchService(deps: BatchServiceDependencies) {
  const record = createBatchRecord({ database: deps.database, fundings: deps.fundings, ...(deps.limits ? { limits: deps.limits } : {}) });

  const viewOf = async (batchId: string) => {
    const batch = await record.find(batchId);
    return batch ? record.view(batch) : null;
  };

  const startRunner = (batchId: string) => startFundBatch(deps.temporal, { taskQueue: deps.taskQueue, input: { batchId, maxInFlight: deps.maxInFlight } });

  /** Tells a running runner that the stored state changed; a runner that is gone has nothing to hear. */
  const tellRunner = async (batchId: string) => {
    try {
      await deps.temporal.workflow.getHandle(batchWorkflowId(batchId)).signal(batchStateChangedSignal);
    } catch (error) {
      deps.logger.warn({ batchId, err: (error as Error).message }, 'batch runner not signalled');
    }
  };

  /** Every row checked: shape, references, one currency, the per-item bounds, the links a TOKEN names. */
  async function checkRequest(request: BatchRequest, mayPayOthersBalance: boolean) {
    let candidate: unknown = request.kind === 'json' ? request.body : null;
    if (request.kind === 'csv') {
      const read = readBatchCsv(request.text, CSV_CURRENCY);
      if (!read.ok) return { ok: false as const, errors: [read.error], errorCount: 1 };
      candidate = { name: request.name, ...(request.source ? { source: request.source } : {}), items: read.items };
    }
    const frame = createBatchFrameSchema.safeParse(candidate);
    if (!frame.success) {
      const errors = frame.error.issues.map((issue): BatchRowError => ({ row: 0, reference: null, field: issue.path.join('.') || 'body', code: 'INVALID', message: issue.message }));
      return { ok: false as const, errors, errorCount: errors.length };
    }
    const rawItems = frame.data.items;
    const check = checkBatchItems(rawItems, deps.limits ? { min: deps.limits.min, max: deps.limits.max } : undefined);
    if (!check.ok) return check;
    // A TOKEN recipient names a link that exists; a user's balance pays only that user's own wallets.
    const linkIds = [...new Set(check.items.flatMap((item) => (item.recipient.type === 'TOKEN' ? [item.recipient.linkId.toLowerCase()] : [])))];
    const links = new Map(
      (await deps.database.link.findMany({ where: { id: { in: linkIds } }, select: { id: true, partnerUserId: true } })).map((link) => [link.id, link.partnerUserId]),
    );
    const batchSource = frame.data.source;
    const errors: BatchRowError[] = [];
    let errorCount = 0;
    for (const item of check.items) {
      let problem: BatchRowError | null = null;
      if (item.recipient.type === 'TOKEN' && !links.has(item.recipient.linkId.toLowerCase())) {
        problem = { row: item.row, reference: item.reference, field: 'recipient.linkId', code: 'LINK_NOT_FOUND', message: 'recipient.linkId names no link' };
      } else if (batchSource?.type === 'USER_BALANCE' && !mayPayOthersBalance && (item.recipient.type !== 'TOKEN' || links.get(item.recipient.linkId.toLowerCase()) !== batchSource.partnerUserId)) {
        problem = { row: item.row, reference: item.reference, field: 'recipient', code: 'SOURCE_NOT_RECIPIENT', message: `a USER_BALANCE source pays only ${batchSource.partnerUserId}'s own linked wallets` };
      }
      if (problem) {
        errorCount += 1;
        if (errors.length < 1000) errors.push(problem);
      }
    }
    if (errorCount > 0) return { ok: false as const, errors, errorCount };
    return { ok: true as const, name: frame.data.name, source: batchSource, items: check.items, total: check.total };
  }

  return {
    view: viewOf,

    /** Validated Idempotency-Key; the request is checked here, all of it, before anything is stored. */
    async create(idempotencyKey: string, request: BatchRequest, actor: string, authority: { mayPayOthersBalance?: boolean } = {}): Promise<CreateBatchResult> {
      const checked = await checkRequest(request, authority.mayPayOthersBalance === true);
      if (!checked.ok) return { kind: 'invalid', errors: checked.errors, errorCount: checked.errorCount };
      const source = checked.source ?? { type: 'TREASURY' as const };
      const fingerprint = requestFingerprint(deps.fingerprintKey, [
        'BATCH',
        checked.name,
        source.type === 'USER_BALANCE' ? `USER_BALANCE:${source.partnerUserId}` : 'TREASURY',
        ...checked.items.map((item) => {
          const amount = normaliseAmount(item.amount);
          const to = item.recipient.type === 'CODE' ? `CODE:${item.recipient.code}` : `TOKEN:${item.recipient.linkId.toLowerCase()}`;
          return `${item.reference}|${to}|${amount.currency}|${amount.value}`;
        }),
      ]);
      const existing = await record.findByIdempotencyKey(idempotencyKey);
      if (existing) return existing.requestFingerprint === fingerprint ? { kind: 'existing', batch: await record.view(existing) } : { kind: 'key-reused' };

      const batchId = randomUUID();
      const items: NewBatchItem[] = checked.items.map((item) => {
        const key = `batch:${batchId}:${item.reference}`;
        return { id: randomUUID(), idempotencyKey: key, workflowId: fundingWorkflowId(key, sha256Hex), reference: item.reference, recipient: item.recipient, amount: item.money.thousandths };
      });
      let inserted: InsertedBatch;
      try {
        inserted = await record.insert({
          id: batchId,
          idempotencyKey,
          requestFingerprint: fingerprint,
          workflowId: batchWorkflowId(batchId),
          name: checked.name,
          source,
          currency: checked.total.currency,
          items,
          createdBy: actor,
          approvalThreshold: deps.approvalThreshold,
        });
      } catch (error) {
        if (error instanceof InsufficientFundsError) {
          return { kind: 'refused', code: 'INSUFFICIENT_FUNDS', detail: `${error.account} does not cover the batch total of ${amountOf(checked.total).value} ${checked.total.currency}` };
        }
        if (error instanceof LimitRefusal) return { kind: 'refused', code: error.code, detail: error.detail };
        throw error;
      }
      if (!inserted.stored) {
        // Another request with this key stored its batch first.
        const stored = await record.getByIdempotencyKey(idempotencyKey);
        return stored.requestFingerprint === fingerprint ? { kind: 'existing', batch: await record.view(stored) } : { kind: 'key-reused' };
      }
      if (!inserted.needsApproval) await startRunner(batchId);
      deps.logger.info({ batchId, items: items.length, needsApproval: inserted.needsApproval }, 'funding batch stored');
      return { kind: 'created', batch: (await viewOf(batchId))! };
    },

    /** A second key approves (never the creator's): the batch runs. */
    async approve(batchId: string, actor: string): Promise<MoveBatchResult> {
      const batch = await record.find(batchId);
      if (!batch) return { kind: 'not-found' };
      // The same key (names compared without case, `Alice` is `alice`) or the same person, by their identity.
      if (sameActor(batch.createdBy, actor)) return { kind: 'same-approver' };
      if (!(await record.move(batchId, 'RUNNING', { field: 'approvedBy', name: actor }, ['AWAITING_APPROVAL']))) return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      await startRunner(batchId);
      return { kind: 'moved', batch: (await viewOf(batchId))! };
    },

    /** Rejected before it ran: no item starts, every hold is released. */
    async reject(batchId: string, actor: string): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, 'REJECTED', { field: 'rejectedBy', name: actor }))) return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      return { kind: 'moved', batch: (await viewOf(batchId))! };
    },

    async pause(batchId: string, actor: string): Promise<MoveBatchResult> {
      return this.moveAndTell(batchId, 'PAUSED', { field: 'pausedBy', name: actor });
    },

    /** A PAUSED batch runs again; one awaiting approval runs only once approved. */
    async resume(batchId: string): Promise<MoveBatchResult> {
      return this.moveAndTell(batchId, 'RUNNING', undefined, ['PAUSED']);
    },

    /** Items not yet started end CANCELLED and release their share; started items finish. */
    async cancel(batchId: string, actor: string): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: actor }))) return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      await tellRunner(batchId);
      return { kind: 'moved', batch: (await viewOf(batchId))! };
    },

    async moveAndTell(batchId: string, to: BatchState, by?: { field: 'pausedBy'; name: string }, only?: readonly BatchState[]): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, to, by, only))) return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      await tellRunner(batchId);
      return { kind: 'moved', batch: (await viewOf(batchId))! };
    },

    /** Batches newest first; the cursor is the last batch's id. */
    /** Null: the cursor names no batch. */
    async list(query: { state?: BatchState; limit: number; cursor?: string }): Promise<{ items: BatchView[]; nextCursor: string | null } | null> {
      const after = query.cursor ? await record.find(query.cursor) : null;
      if (query.cursor && !after) return null;
      const rows = await record.list({ ...(query.state ? { state: query.state } : {}), limit: query.limit + 1, ...(after ? { before: { createdAt: after.createdAt, id: after.id } } : {}) });
      const page = rows.slice(0, query.limit);
      return { items: await Promise.all(page.map((batch) => record.view(batch))), nextCursor: rows.length > query.limit ? page.at(-1)!.id : null };
    },

    /** A page of a batch's items in reference order; the cursor is the last reference. Null: no such batch. */
    async items(batchId: string, query: { status?: BatchItemStatus; limit: number; cursor?: string }): Promise<{ items: BatchItemView[]; nextCursor: string | null } | null> {
      if (!(await record.find(batchId))) return null;
      const rows = await deps.fundings.batchItemsPage(batchId, { ...(query.status ? { status: query.status } : {}), ...(query.cursor ? { afterReference: query.cursor } : {}), limit: query.limit + 1 });
      const page = rows.slice(0, query.limit).map(itemView);
      return { items: page, nextCursor: rows.length > query.limit ? page.at(-1)!.reference : null };
    },

    /** Every item, in reference order, for the report (read in pages: a batch has up to 100,000). */
    async *allItems(batchId: string): AsyncGenerator<BatchItemView> {
      let cursor: string | undefined;
      for (;;) {
        const rows = await deps.fundings.batchItemsPage(batchId, { limit: 2000, ...(cursor ? { afterReference: cursor } : {}) });
        for (const row of rows) yield itemView(row);
        if (rows.length < 2000) return;
        cursor = rows.at(-1)!.batchReference ?? undefined;
      }
    },
  };
}

function itemView(row: { id: string; batchReference: string | null; status: string; errorCode: string | null; amount: { toFixed(digits?: number): string }; currency: string }): BatchItemView {
  const status = (row.status === 'FAILED' && row.errorCode === 'CANCELLED' ? 'CANCELLED' : row.status) as BatchItemStatus;
  return { reference: row.batchReference ?? '', fundingId: row.id, status, errorCode: row.errorCode, amount: amountOf(fromNumeric(row.amount), row.currency) };
}

export type BatchService = ReturnType<typeof createBatchService>;
