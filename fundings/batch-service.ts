// Funding batches as a service for the ops API (contract-decisions section 14): create one from a
// JSON body or a CSV file (every row checked before anything is stored; the total held; idempotent
// on its key), approve or reject it (a second key), pause, resume and cancel it, and read it, its
// items and its report. The batch's rows change only through the batch record, its items' through
// the funding record; the runner is the fundBatch workflow, reached through its contract. A runner
// Temporal cannot start now (lib/workflow-unavailable.ts) leaves the batch stored as it is: a
// create says so (`not-started`: the same request with its key starts it), an approve is done
// all the same (`runnerNotStarted`); the sweep starts the runner of a RUNNING or PAUSED batch at
// its next run either way.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  type BatchItemStatus,
  type BatchItemView,
  type BatchRowError,
  type BatchState,
  type BatchView,
  type CheckedBatchItems,
  MAX_LISTED_ROW_ERRORS,
  mergeRowProblems,
} from '../domain/funding-batch.ts';
import type { FundingRefusalCode, FundingSource } from '../domain/ledger.ts';
import { amountOf, fromNumeric } from '../domain/money.ts';
import { sameActor, type KeyOwners } from '../domain/actor.ts';
import { ownerOfLink } from '../domain/link.ts';
import type { FundingBatch } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';
import { requestFingerprint, sha256Hex } from '../lib/idempotency.ts';
import { keysetRows } from '../lib/keyset-rows.ts';
import type { Logger } from '../lib/logger.ts';
import type { UploadBudget } from '../lib/upload-budget.ts';
import { workflowRefusalOf, type WorkflowRefusal } from '../lib/workflow-unavailable.ts';
import { readBackDone } from '../lib/admission.ts';
import { InsufficientFundsError } from '../ledger/ledger.ts';
import { LimitRefusal, type FundingLimits } from '../ledger/limits.ts';
import { batchStateChangedSignal, batchWorkflowId, startFundBatch } from '../workflows/fund-batch.contract.ts';
import { fundingWorkflowId } from '../workflows/fund-wallet.contract.ts';
import { createBatchRecord, type InsertedBatch } from './batch-record.ts';
import { readBatchUpload, type BatchUploadRead } from './batch-upload.ts';
import type { BatchItemsRecord, NewBatchItem } from './batch-items-record.ts';
import type { FundingRecord } from './funding-record.ts';

export interface BatchServiceDependencies {
  database: Database;
  fundings: FundingRecord;
  /** The batch items' writes (fundings/batch-items-record.ts), on the same ledger and metrics as `fundings`. */
  batchItems: BatchItemsRecord;
  temporal: Client;
  taskQueue: string;
  fingerprintKey: Buffer;
  logger: Logger;
  limits?: FundingLimits;
  /** BATCH_APPROVAL_THRESHOLD (thousandths); null: no batch waits for approval. */
  approvalThreshold: bigint | null;
  /** BATCH_MAX_IN_FLIGHT. */
  maxInFlight: number;
  /** What the process's batch uploads may hold at once (lib/upload-budget.ts). */
  uploadBudget: UploadBudget;
  /** OPS_KEY_OWNERS: who holds each ops key; a key and its owner are one for maker-checker. */
  keyOwners?: KeyOwners;
}

/**
 * A batch request as it arrives, its body not read yet: a JSON body, or a CSV file with its name
 * and source from the query. The body is read as a stream (fundings/batch-upload.ts).
 */
export type BatchRequest =
  | { kind: 'json'; body: AsyncIterable<Uint8Array | string> }
  | { kind: 'csv'; body: AsyncIterable<Uint8Array | string>; name: unknown; source?: FundingSource };

/** How long an upload refused for the budget is told to wait: the uploads before it are stored in seconds. */
const UPLOAD_RETRY_AFTER_SECONDS = 5;

export type CreateBatchResult =
  | { kind: 'created'; batch: BatchView }
  | { kind: 'existing'; batch: BatchView }
  /**
   * Stored with its total held, to run (RUNNING, or PAUSED since), but Temporal could not be asked
   * now to start its runner. Stored by this request: no item has started. By an earlier one with its
   * key: its runner may run or not. The same request with the same key answers it and starts the
   * runner; else the sweep does at its next run.
   */
  | { kind: 'not-started'; batch: BatchView; refusal: WorkflowRefusal; storedBy: 'this-request' | 'an-earlier-request' }
  | { kind: 'key-reused' }
  /**
   * The person who sent it may no longer store it once its body was read (their console session ended, or the scopes it
   * was sent with were taken away meanwhile): nothing stored.
   */
  | { kind: 'no-longer-allowed' }
  /** 422 BATCH_INVALID: what is wrong with which rows (row 0: the request or the file itself). */
  | { kind: 'invalid'; errors: BatchRowError[]; errorCount: number }
  | { kind: 'refused'; code: FundingRefusalCode; detail: string }
  /** 413: the body is longer than a batch can be; read no further. */
  | { kind: 'too-large'; maxBytes: number }
  /** 400 MALFORMED_JSON. */
  | { kind: 'malformed'; message: string }
  /** The client stopped sending mid-body: 400 REQUEST_ABORTED (if it is still there). */
  | { kind: 'aborted' }
  /** 503 OVERLOADED: the uploads in progress hold the upload budget; nothing was stored. */
  | {
      kind: 'overloaded';
      retryAfterSeconds: number;
      detail: string;
      /** A connection the database refused: the batch may have been stored before it (lib/admission.ts). */
      connectionRefused?: true;
    };

export type MoveBatchResult =
  /** `runnerNotStarted`: approved, but its runner could not be started now (the sweep starts it at its next run). */
  | { kind: 'moved'; batch: BatchView; runnerNotStarted?: WorkflowRefusal }
  | { kind: 'not-found' }
  | { kind: 'same-approver' }
  | { kind: 'wrong-state'; state: BatchState };

/** The CSV file's currency: sandbox and partner wallets hold PHP. */
const CSV_CURRENCY = 'PHP';

/** TOKEN recipients' links looked up per query. */
const LINK_LOOKUP_CHUNK = 5000;
/**
 * What one distinct link a batch's TOKEN recipients name costs the upload budget while they are checked: its id in a
 * set and a list, and its partner user id in a map of those found (about 200 bytes of heap).
 */
const LINK_LOOKUP_BYTES_PER_LINK = 256;
/** Items a report reads at once: what a report whose client stopped reading holds. */
const REPORT_PAGE_ROWS = 2000;

/**
 * The request's normalised form the fingerprint is the HMAC of, part by part (the same parts, in
 * the same order, as batches stored before the upload was streamed: their retries still match).
 */
function* fingerprintParts(
  name: string,
  source: FundingSource,
  items: Iterable<{
    reference: string;
    recipient: NewBatchItem['recipient'];
    amount: { currency: string; value: string };
  }>,
): Generator<string> {
  yield 'BATCH';
  yield name;
  yield source.type === 'USER_BALANCE' ? `USER_BALANCE:${source.partnerUserId}` : 'TREASURY';
  for (const item of items) {
    const to =
      item.recipient.type === 'CODE' ? `CODE:${item.recipient.code}` : `TOKEN:${item.recipient.linkId.toLowerCase()}`;
    yield `${item.reference}|${to}|${item.amount.currency}|${item.amount.value}`;
  }
}

export function createBatchService(deps: BatchServiceDependencies) {
  const record = createBatchRecord({
    database: deps.database,
    fundings: deps.fundings,
    batchItems: deps.batchItems,
    ...(deps.limits ? { limits: deps.limits } : {}),
    ...(deps.keyOwners ? { keyOwners: deps.keyOwners } : {}),
  });

  const viewOf = async (batchId: string) => {
    const batch = await record.find(batchId);
    return batch ? record.view(batch) : null;
  };

  /**
   * Starts the batch's runner (a running one is left as it is); the refusal when Temporal cannot take the start now
   * (anything else is thrown).
   */
  const startRunner = async (batchId: string): Promise<WorkflowRefusal | null> => {
    try {
      await startFundBatch(deps.temporal, {
        taskQueue: deps.taskQueue,
        input: { batchId, maxInFlight: deps.maxInFlight },
      });
      return null;
    } catch (error) {
      const refusal = workflowRefusalOf(error);
      if (!refusal) throw error;
      deps.logger.warn(
        { batchId, reason: refusal.reason },
        'batch runner not started: Temporal refused the start; the sweep starts it',
      );
      return refusal;
    }
  };

  /**
   * A batch stored by an earlier request with this key: its runner is started if it should run (the
   * earlier request may have been refused its start), so the same request again is what starts it.
   */
  const answerStored = async (stored: FundingBatch): Promise<CreateBatchResult> => {
    const refusal = stored.state === 'RUNNING' || stored.state === 'PAUSED' ? await startRunner(stored.id) : null;
    const batch = await record.view(stored);
    return refusal
      ? { kind: 'not-started', batch, refusal, storedBy: 'an-earlier-request' }
      : { kind: 'existing', batch };
  };

  /** Tells a running runner that the stored state changed; a runner that is gone has nothing to hear. */
  const tellRunner = async (batchId: string) => {
    try {
      await deps.temporal.workflow.getHandle(batchWorkflowId(batchId)).signal(batchStateChangedSignal);
    } catch (error) {
      deps.logger.warn({ batchId, err: (error as Error).message }, 'batch runner not signalled');
    }
  };

  /**
   * Every row checked as the body is read (fundings/batch-upload.ts: shape, references, one
   * currency, the per-item bounds), then the links a TOKEN names, and whose wallets a user's
   * balance may pay.
   */
  async function checkRequest(
    request: BatchRequest,
    share: ReturnType<UploadBudget['open']>,
    mayPayOthersBalance: boolean,
  ): Promise<BatchUploadRead> {
    const form =
      request.kind === 'csv'
        ? {
            kind: 'csv' as const,
            name: request.name,
            ...(request.source ? { source: request.source } : {}),
            currency: CSV_CURRENCY,
          }
        : { kind: 'json' as const };
    const read = await readBatchUpload(
      request.body,
      form,
      share,
      deps.limits ? { bounds: { min: deps.limits.min, max: deps.limits.max } } : {},
    );
    if (!read.ok) {
      // Rows bad in themselves: the good ones' recipients are checked too, so that one answer names every bad row.
      if (read.kind !== 'invalid' || !read.goodItems) return read;
      const later = await recipientProblems(read.goodItems, read.source, share, mayPayOthersBalance);
      if (!later) return { ok: false, kind: 'over-budget' };
      return { ok: false, kind: 'invalid', ...mergeRowProblems(read, later) };
    }
    const problems = await recipientProblems(read.items, read.source, share, mayPayOthersBalance);
    if (!problems) return { ok: false, kind: 'over-budget' };
    if (problems.errorCount > 0) return { ok: false, kind: 'invalid', ...problems };
    return read;
  }

  /**
   * What is wrong with the recipients of rows good in themselves: a TOKEN names no link, or a user's balance would pay
   * another's wallet. Null: the upload budget cannot hold the lookup.
   */
  async function recipientProblems(
    items: CheckedBatchItems,
    batchSource: FundingSource | undefined,
    share: ReturnType<UploadBudget['open']>,
    mayPayOthersBalance: boolean,
  ): Promise<{ errors: BatchRowError[]; errorCount: number } | null> {
    // A TOKEN recipient names a link that exists; a user's balance pays only that user's own wallets. The lookup's
    // own memory (each link id, the list of them, what was found) is the upload's too: charged as it grows.
    const linkIds = new Set<string>();
    for (const item of items) {
      if (item.recipient.type !== 'TOKEN') continue;
      const linkId = item.recipient.linkId.toLowerCase();
      if (linkIds.has(linkId)) continue;
      if (!share.take(LINK_LOOKUP_BYTES_PER_LINK)) return null;
      linkIds.add(linkId);
    }
    const links = new Map<string, string | null>();
    const wanted = [...linkIds];
    for (let start = 0; start < wanted.length; start += LINK_LOOKUP_CHUNK) {
      const found = await deps.database.link.findMany({
        where: { id: { in: wanted.slice(start, start + LINK_LOOKUP_CHUNK) } },
        select: { id: true, partnerUserId: true, kind: true },
      });
      for (const link of found) links.set(link.id, ownerOfLink(link));
    }
    const errors: BatchRowError[] = [];
    let errorCount = 0;
    for (const item of items) {
      let problem: BatchRowError | null = null;
      if (item.recipient.type === 'TOKEN' && !links.has(item.recipient.linkId.toLowerCase())) {
        problem = {
          row: item.row,
          reference: item.reference,
          field: 'recipient.linkId',
          code: 'LINK_NOT_FOUND',
          message: 'recipient.linkId names no link',
        };
      } else if (
        batchSource?.type === 'USER_BALANCE' &&
        !mayPayOthersBalance &&
        (item.recipient.type !== 'TOKEN' ||
          links.get(item.recipient.linkId.toLowerCase()) !== batchSource.partnerUserId)
      ) {
        problem = {
          row: item.row,
          reference: item.reference,
          field: 'recipient',
          code: 'SOURCE_NOT_RECIPIENT',
          message: `a USER_BALANCE source pays only ${batchSource.partnerUserId}'s own linked wallets`,
        };
      }
      if (problem) {
        errorCount += 1;
        if (errors.length < MAX_LISTED_ROW_ERRORS) errors.push(problem);
      }
    }
    return { errors, errorCount };
  }

  async function createChecked(
    idempotencyKey: string,
    checked: BatchUploadRead,
    actor: string,
    stillAllowed?: () => Promise<boolean>,
  ): Promise<CreateBatchResult> {
    if (!checked.ok) {
      switch (checked.kind) {
        case 'invalid':
          return { kind: 'invalid', errors: checked.errors, errorCount: checked.errorCount };
        case 'too-large':
          return { kind: 'too-large', maxBytes: checked.maxBytes };
        case 'malformed':
          return { kind: 'malformed', message: checked.message };
        case 'aborted':
          return { kind: 'aborted' };
        case 'over-budget':
          return {
            kind: 'overloaded',
            retryAfterSeconds: UPLOAD_RETRY_AFTER_SECONDS,
            detail:
              'the batch uploads being read and stored now hold the memory set aside for uploads; nothing was stored',
          };
      }
    }
    const source = checked.source ?? { type: 'TREASURY' as const };
    const fingerprint = requestFingerprint(deps.fingerprintKey, fingerprintParts(checked.name, source, checked.items));
    const existing = await record.findByIdempotencyKey(idempotencyKey);
    if (existing) return existing.requestFingerprint === fingerprint ? answerStored(existing) : { kind: 'key-reused' };
    // Asked once the body was read and its key stores nothing yet (a batch this key stored before is answered, whoever
    // sends it again: nothing is stored twice, and the person signing in again finds it).
    if (stillAllowed && !(await stillAllowed())) return { kind: 'no-longer-allowed' };

    const batchId = randomUUID();
    const count = checked.items.length;
    const { items } = checked;
    /** The items as rows, a chunk at a time: ids, keys and workflow ids made as each chunk is stored. */
    function* chunks(size: number): Generator<NewBatchItem[]> {
      for (let start = 0; start < count; start += size) {
        const chunk: NewBatchItem[] = [];
        for (let index = start; index < Math.min(count, start + size); index += 1) {
          const item = items.at(index);
          const key = `batch:${batchId}:${item.reference}`;
          chunk.push({
            id: randomUUID(),
            idempotencyKey: key,
            workflowId: fundingWorkflowId(key, sha256Hex),
            reference: item.reference,
            recipient: item.recipient,
            amount: item.money.thousandths,
          });
        }
        yield chunk;
      }
    }
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
        items: { count, total: checked.total.thousandths, chunks },
        createdBy: actor,
        approvalThreshold: deps.approvalThreshold,
      });
    } catch (error) {
      if (error instanceof InsufficientFundsError) {
        return {
          kind: 'refused',
          code: 'INSUFFICIENT_FUNDS',
          detail: `${error.account} does not cover the batch total of ${amountOf(checked.total).value} ${checked.total.currency}`,
        };
      }
      if (error instanceof LimitRefusal) return { kind: 'refused', code: error.code, detail: error.detail };
      throw error;
    }
    if (!inserted.stored) {
      // Another request with this key stored its batch first.
      const stored = await record.getByIdempotencyKey(idempotencyKey);
      return stored.requestFingerprint === fingerprint ? answerStored(stored) : { kind: 'key-reused' };
    }
    const refusal = inserted.needsApproval ? null : await startRunner(batchId);
    deps.logger.info(
      {
        batchId,
        items: count,
        needsApproval: inserted.needsApproval,
        runnerStarted: !inserted.needsApproval && !refusal,
      },
      'funding batch stored',
    );
    const batch = (await viewOf(batchId))!;
    return refusal ? { kind: 'not-started', batch, refusal, storedBy: 'this-request' } : { kind: 'created', batch };
  }

  return {
    view: viewOf,

    /**
     * Validated Idempotency-Key; the request is read and checked here, all of it, before anything
     * is stored. The upload holds its share of the upload budget until it is stored or refused.
     */
    async create(
      idempotencyKey: string,
      request: BatchRequest,
      actor: string,
      authority: {
        mayPayOthersBalance?: boolean;
        /**
         * Asked once the body was read and its key found new, before anything is stored: whether whoever sent it may
         * still (a console session may end while its file arrives). Absent: an ops key's, which nothing ends meanwhile.
         */
        stillAllowed?: () => Promise<boolean>;
      } = {},
    ): Promise<CreateBatchResult> {
      const share = deps.uploadBudget.open();
      try {
        return await createChecked(
          idempotencyKey,
          await checkRequest(request, share, authority.mayPayOthersBalance === true),
          actor,
          authority.stillAllowed,
        );
      } finally {
        share.close();
      }
    },

    /** Whether `actor` made the batch `createdBy` names, for maker-checker: a key and its owner are one. */
    isMaker: (createdBy: string, actor: string): boolean => sameActor(createdBy, actor, deps.keyOwners),

    /** A second key approves (never the creator's): the batch runs. */
    async approve(batchId: string, actor: string): Promise<MoveBatchResult> {
      const batch = await record.find(batchId);
      if (!batch) return { kind: 'not-found' };
      // A batch that awaits no approval is one nobody may approve (409 BATCH_STATE, whoever asks: contract section 14).
      if (batch.state !== 'AWAITING_APPROVAL') return { kind: 'wrong-state', state: batch.state };
      // The same key (names compared without case, `Alice` is `alice`) or the same person, by their identity.
      if (sameActor(batch.createdBy, actor, deps.keyOwners)) return { kind: 'same-approver' };
      if (!(await record.move(batchId, 'RUNNING', { field: 'approvedBy', name: actor }, ['AWAITING_APPROVAL'])))
        return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      // The approval is stored whatever Temporal says; a runner it cannot start now is the sweep's to start.
      const refusal = await startRunner(batchId);
      return {
        kind: 'moved',
        batch: (await readBackDone(
          refusal ? 'the batch was approved (its runner starts at the sweep’s next run)' : 'the batch was approved',
          () => viewOf(batchId),
        ))!,
        ...(refusal ? { runnerNotStarted: refusal } : {}),
      };
    },

    /** Rejected before it ran: no item starts, every hold is released. */
    async reject(batchId: string, actor: string): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, 'REJECTED', { field: 'rejectedBy', name: actor })))
        return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      return { kind: 'moved', batch: (await readBackDone('the batch was rejected', () => viewOf(batchId)))! };
    },

    async pause(batchId: string, actor: string): Promise<MoveBatchResult> {
      return this.moveAndTell(batchId, 'PAUSED', { field: 'pausedBy', name: actor });
    },

    /** A PAUSED batch runs again (who resumed it kept with the move); one awaiting approval runs only once approved. */
    async resume(batchId: string, actor: string): Promise<MoveBatchResult> {
      return this.moveAndTell(batchId, 'RUNNING', { field: 'resumedBy', name: actor }, ['PAUSED']);
    },

    /** Items not yet started end CANCELLED and release their share; started items finish. */
    async cancel(batchId: string, actor: string): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: actor })))
        return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      await tellRunner(batchId);
      return { kind: 'moved', batch: (await readBackDone('the batch was cancelled', () => viewOf(batchId)))! };
    },

    async moveAndTell(
      batchId: string,
      to: BatchState,
      by: { field: 'pausedBy' | 'resumedBy'; name: string },
      only?: readonly BatchState[],
    ): Promise<MoveBatchResult> {
      if (!(await record.find(batchId))) return { kind: 'not-found' };
      if (!(await record.move(batchId, to, by, only)))
        return { kind: 'wrong-state', state: (await record.find(batchId))!.state };
      await tellRunner(batchId);
      const done = `the batch was ${to === 'PAUSED' ? 'paused' : 'resumed'}`;
      return { kind: 'moved', batch: (await readBackDone(done, () => viewOf(batchId)))! };
    },

    /** Batches newest first; the cursor is the last batch's id. */
    /** Null: the cursor names no batch. */
    async list(query: {
      state?: BatchState;
      limit: number;
      cursor?: string;
    }): Promise<{ items: BatchView[]; nextCursor: string | null } | null> {
      const after = query.cursor ? await record.find(query.cursor) : null;
      if (query.cursor && !after) return null;
      const rows = await record.list({
        ...(query.state ? { state: query.state } : {}),
        limit: query.limit + 1,
        ...(after ? { before: { createdAt: after.createdAt, id: after.id } } : {}),
      });
      const page = rows.slice(0, query.limit);
      return {
        items: await record.views(page),
        nextCursor: rows.length > query.limit ? page.at(-1)!.id : null,
      };
    },

    /** A page of a batch's items in reference order; the cursor is the last reference. Null: no such batch. */
    async items(
      batchId: string,
      query: { status?: BatchItemStatus; limit: number; cursor?: string },
    ): Promise<{ items: BatchItemView[]; nextCursor: string | null } | null> {
      if (!(await record.find(batchId))) return null;
      const rows = await deps.fundings.batchItemsPage(batchId, {
        ...(query.status ? { status: query.status } : {}),
        ...(query.cursor ? { afterReference: query.cursor } : {}),
        limit: query.limit + 1,
      });
      const page = rows.slice(0, query.limit).map(itemView);
      return { items: page, nextCursor: rows.length > query.limit ? page.at(-1)!.reference : null };
    },

    /**
     * Every item, in reference order, for the report: read a page at a time (a batch has up to
     * 100,000), the next page only once the items before it were taken.
     */
    async *allItems(batchId: string): AsyncGenerator<BatchItemView> {
      const readPage = (afterReference: string | undefined, limit: number) =>
        deps.fundings.batchItemsPage(batchId, { limit, ...(afterReference ? { afterReference } : {}) });
      // Every item of a batch has its reference.
      const rows = keysetRows(readPage, (row) => row.batchReference ?? '', REPORT_PAGE_ROWS);
      for await (const row of rows) yield itemView(row);
    },
  };
}

function itemView(row: {
  id: string;
  batchReference: string | null;
  status: string;
  errorCode: string | null;
  amount: { toFixed(digits?: number): string };
  currency: string;
}): BatchItemView {
  const status = (
    row.status === 'FAILED' && row.errorCode === 'CANCELLED' ? 'CANCELLED' : row.status
  ) as BatchItemStatus;
  return {
    reference: row.batchReference ?? '',
    fundingId: row.id,
    status,
    errorCode: row.errorCode,
    amount: amountOf(fromNumeric(row.amount), row.currency),
  };
}

export type BatchService = ReturnType<typeof createBatchService>;
