// The batch record: the one module that writes the funding_batch table (contract-decisions
// section 14). A batch is stored with its items in one transaction (each item a PENDING funding
// with its hold, written by the batch items record), idempotent on its key; every state change is a
// move the transition table allows, guarded in SQL by the states it may come from, naming the ops
// key that made it. A batch's items keep their own state in their funding rows.
import type { FundingBatch, Prisma } from '../generated/prisma/client.ts';
import {
  activeBatchStates,
  batchTransitions,
  type BatchItemStatus,
  type BatchState,
  type BatchView,
} from '../domain/funding-batch.ts';
import { sourcesOf } from '../domain/transitions.ts';
import { treasurySource, type FundingSource } from '../domain/ledger.ts';
import { amountOf, fromNumeric, toNumeric } from '../domain/money.ts';
import { actorIdentity, spellingsOf, type KeyOwners } from '../domain/actor.ts';
import { batchWebhookEventType } from '../domain/webhook.ts';
import { inAdmissionLane, lockNotAvailable, Overloaded } from '../lib/admission.ts';
import type { Database } from '../lib/database.ts';
import { checkBatchUserLimits, lockPartnerUser, type FundingLimits } from '../ledger/limits.ts';
import { emitWebhookEvent } from '../webhooks/outbox.ts';
import type { BatchItemRows, BatchItemsRecord, EndedBatchItems } from './batch-items-record.ts';
import type { BatchItemTally, FundingRecord } from './funding-record.ts';
import { userUsage } from './funding-usage.ts';

/** How long a move someone asked for waits for the batch's row (takeRowSoon), and when a refused one asks again. */
const BATCH_ROW_WAIT = '2s';
const BATCH_BUSY_RETRY_AFTER_SECONDS = 5;

export interface NewBatch {
  id: string;
  idempotencyKey: string;
  requestFingerprint: string;
  workflowId: string;
  name: string;
  source?: FundingSource;
  currency: string;
  /** Made a chunk at a time as they are stored. */
  items: BatchItemRows;
  createdBy: string;
  /**
   * BATCH_APPROVAL_THRESHOLD (thousandths): the batch is stored AWAITING_APPROVAL when its total,
   * plus the batches its creator drew from the same source in the last 24 hours without approval,
   * is at least this (contract-decisions section 14); else RUNNING. Null: never waits; 0: always.
   */
  approvalThreshold: bigint | null;
}

/** What an insert did: nothing (the key was taken), or stored the batch waiting for approval or running. */
export type InsertedBatch = { stored: false } | { stored: true; needsApproval: boolean };

export interface BatchRecordDependencies {
  database: Database;
  /** Reads the batch's items (their tally). */
  fundings: Pick<FundingRecord, 'batchItemTally' | 'batchItemTallies'>;
  /** Stores the batch's items and ends the ones not started (fundings/batch-items-record.ts). */
  batchItems: Pick<
    BatchItemsRecord,
    'insertBatchItems' | 'cancelPendingBatchItems' | 'releaseCancelledBatchItems' | 'countFinished'
  >;
  /** The per-user daily limits count a USER_BALANCE batch's items; absent: none. */
  limits?: FundingLimits;
  /** OPS_KEY_OWNERS: a key and its owner are one creator for the approval threshold's sum. */
  keyOwners?: KeyOwners;
}

/** Who made a move, kept on the batch (the audit of ops writes keeps every request too). */
type Mover = 'approvedBy' | 'rejectedBy' | 'pausedBy' | 'resumedBy' | 'cancelledBy';

export function createBatchRecord(deps: BatchRecordDependencies) {
  const { database, fundings, batchItems } = deps;

  /**
   * What `createdBy` drew from this source in the last 24 hours through batches no second person
   * approved (running, paused, completed or cancelled without approval, or still waiting for it):
   * ten batches just under the threshold need approval as one over it does. Counted under a lock
   * per creator and source, so two batches stored at once see each other. The creator is a key
   * (its name, without case) or a person (their identity, whatever their display name: domain/actor.ts).
   */
  async function unapprovedRecently(
    tx: Prisma.TransactionClient,
    createdBy: string,
    sourceUser: string | null,
    currency: string,
  ): Promise<bigint> {
    const identity = actorIdentity(createdBy, deps.keyOwners);
    // A key and the person who owns it are one creator: each spelling of the identity as created_by stores it.
    const spellings = spellingsOf(identity, deps.keyOwners);
    await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`walletflow:batch-approval:${identity}:${sourceUser ?? 'TREASURY'}`}, 0))`;
    // actorIdentity in SQL: a person's `(oidc:…)` or a wallet user's `(app:…)` suffix as it is, else the key's name,
    // without case: lowered in the C collation (A-Z alone, as JavaScript lowers a key's name), not the database's,
    // where a Turkish locale lowers I to a dotless ı.
    const rows = await tx.$queryRaw<Array<{ total: Prisma.Decimal | null }>>`
      SELECT SUM(total_amount) AS total FROM funding_batch
      WHERE COALESCE(substring(created_by from '\\(((?:oidc|app):[^()]+)\\)$'), lower(created_by COLLATE "C")) = ANY(${spellings}::text[]) AND source_partner_user_id IS NOT DISTINCT FROM ${sourceUser} AND currency = ${currency}
        AND created_at > now() - interval '24 hours' AND approved_by IS NULL AND state <> 'REJECTED'::"FundingBatchState"`;
    const total = rows[0]?.total;
    return total ? fromNumeric(total) : 0n;
  }

  /**
   * The batch's row for a move someone asked for, within BATCH_ROW_WAIT: another move may hold it for minutes (a cancel
   * ending 100,000 items), and a request waiting behind it held a database slot and a connection meanwhile, so a few
   * repeats (a double click, a client's retry) filled the process's line for every other request. The runner's claims
   * hold it a moment (they share it), so the wait is a short one rather than none, and then the rest of the move waits
   * as it always did. Refused, nothing changed, with when to ask again. The runner's own move (completed) waits: it is
   * no one's request.
   */
  async function takeRowSoon(tx: Prisma.TransactionClient, batchId: string): Promise<void> {
    try {
      await tx.$executeRaw`SELECT set_config('lock_timeout', ${BATCH_ROW_WAIT}, true)`;
      await tx.$queryRaw`SELECT 1 AS locked FROM funding_batch WHERE id = ${batchId}::uuid FOR NO KEY UPDATE`;
      // The rest of the move waits as the database's own setting has it, not as this wait.
      await tx.$executeRaw`SET LOCAL lock_timeout TO DEFAULT`;
    } catch (error) {
      if (!lockNotAvailable(error)) throw error;
      throw new Overloaded(
        BATCH_BUSY_RETRY_AFTER_SECONDS,
        `batch ${batchId} is being changed just now (another move of it is under way: ending many items takes minutes): nothing was changed; read the batch, and send the request again after Retry-After if it still applies`,
        'batch-busy',
      );
    }
  }

  /** The webhook a batch's end emits, in the move's own transaction. */
  async function announce(tx: Prisma.TransactionClient, batchId: string, state: BatchState): Promise<void> {
    const type = batchWebhookEventType(state);
    if (!type) return;
    const batch = await tx.fundingBatch.findUniqueOrThrow({ where: { id: batchId } });
    await emitWebhookEvent(tx, { type, data: await view(batch, tx) });
  }

  /** The batch as the ops API shows it: its items counted and summed by state, its rate and ETA. */
  async function view(batch: FundingBatch, db: Prisma.TransactionClient | Database = database): Promise<BatchView> {
    return viewWith(batch, await fundings.batchItemTally(batch.id, db));
  }

  /** Batches as the ops API shows them (a page of the list): their tallies read in one statement. */
  async function views(batches: readonly FundingBatch[]): Promise<BatchView[]> {
    const tallies = await fundings.batchItemTallies(batches.map((batch) => batch.id));
    return batches.map((batch) => viewWith(batch, tallies.get(batch.id) ?? []));
  }

  function viewWith(batch: FundingBatch, tally: BatchItemTally): BatchView {
    const counts: BatchView['counts'] = {};
    const amounts: BatchView['amounts'] = {};
    for (const row of tally) {
      counts[row.status] = row.count;
      amounts[row.status] = amountOf(row.amount, batch.currency);
    }
    const waiting =
      (counts.PENDING ?? 0) + (counts.CREATING ?? 0) + (counts.EXECUTING ?? 0) + (counts.RECONCILING ?? 0);
    const done = batch.totalCount - waiting;
    const seconds = batch.startedAt
      ? ((batch.completedAt ?? new Date()).getTime() - batch.startedAt.getTime()) / 1000
      : null;
    const itemsPerSecond = seconds !== null && seconds > 0 ? Math.round((done / seconds) * 10) / 10 : null;
    return {
      batchId: batch.id,
      name: batch.name,
      state: batch.state,
      createdBy: batch.createdBy,
      approvedBy: batch.approvedBy,
      source:
        batch.sourcePartnerUserId === null
          ? treasurySource
          : { type: 'USER_BALANCE', partnerUserId: batch.sourcePartnerUserId },
      total: { count: batch.totalCount, amount: amountOf(fromNumeric(batch.totalAmount), batch.currency) },
      counts,
      amounts,
      createdAt: batch.createdAt.toISOString(),
      startedAt: batch.startedAt?.toISOString() ?? null,
      completedAt: batch.completedAt?.toISOString() ?? null,
      itemsPerSecond,
      etaSeconds:
        itemsPerSecond && waiting > 0 && batch.state === 'RUNNING' ? Math.ceil(waiting / itemsPerSecond) : null,
    };
  }

  return {
    find: (batchId: string) => database.fundingBatch.findUnique({ where: { id: batchId } }),
    findByIdempotencyKey: (idempotencyKey: string) => database.fundingBatch.findUnique({ where: { idempotencyKey } }),
    getByIdempotencyKey: (idempotencyKey: string) =>
      database.fundingBatch.findUniqueOrThrow({ where: { idempotencyKey } }),
    view,
    views,

    /**
     * Stores the batch and its items (each with its hold) in one transaction; false when the key
     * is taken. A source that does not cover the total throws InsufficientFundsError, a daily
     * limit a LimitRefusal: nothing is stored either way. One user's batches and fundings wait
     * for each other (the same lane and lock as a single funding's).
     */
    async insert(batch: NewBatch): Promise<InsertedBatch> {
      const source = batch.source ?? treasurySource;
      const sourceUser = source.type === 'USER_BALANCE' ? source.partnerUserId : null;
      const total = batch.items.total;
      let needsApproval = false;
      const inserted = await inAdmissionLane(sourceUser === null ? null : `partner-user:${sourceUser}`, () =>
        database.$transaction(
          async (tx) => {
            if (sourceUser !== null) await lockPartnerUser(tx, sourceUser);
            needsApproval =
              batch.approvalThreshold !== null &&
              total + (await unapprovedRecently(tx, batch.createdBy, sourceUser, batch.currency)) >=
                batch.approvalThreshold;
            const count = await tx.$executeRaw`
              INSERT INTO funding_batch (id, idempotency_key, request_fingerprint, workflow_id, name, state, source_partner_user_id,
                                         currency, total_count, total_amount, created_by, started_at, updated_at)
              VALUES (${batch.id}::uuid, ${batch.idempotencyKey}, ${batch.requestFingerprint}, ${batch.workflowId}, ${batch.name},
                      ${needsApproval ? 'AWAITING_APPROVAL' : 'RUNNING'}::"FundingBatchState", ${sourceUser}, ${batch.currency},
                      ${batch.items.count}, ${toNumeric(total)}::numeric, ${batch.createdBy}, ${needsApproval ? null : new Date()}, now())
              ON CONFLICT (idempotency_key) DO NOTHING`;
            if (count !== 1) return count;
            if (deps.limits && sourceUser !== null) {
              // The daily limits count every item; the per-minute limit does not apply to a batch.
              checkBatchUserLimits(
                deps.limits,
                await userUsage(tx, sourceUser, deps.limits.timeZone),
                batch.items.count,
                total,
                batch.currency,
              );
            }
            await batchItems.insertBatchItems(tx, {
              batchId: batch.id,
              requestFingerprint: batch.requestFingerprint,
              source,
              currency: batch.currency,
              requestedBy: batch.createdBy,
              items: batch.items,
            });
            return count;
          },
          { timeout: 300_000, maxWait: 10_000 },
        ),
      );
      return inserted === 1 ? { stored: true, needsApproval } : { stored: false };
    },

    /**
     * Moves the batch to `to` if the table allows it from where it stands (or only from `from`,
     * narrower: a resume runs a PAUSED batch, never one awaiting approval); true when this call
     * moved it. `by`: the ops key or person that asked (kept as approvedBy, rejectedBy, pausedBy,
     * resumedBy or cancelledBy, in the move's own statement). A batch that ends (cancelled,
     * rejected) ends its items not yet started in the same transaction, FAILED with code
     * CANCELLED, their holds released and each announced, and then its own webhook, which counts
     * them so.
     */
    async move(
      batchId: string,
      to: BatchState,
      by?: { field: Mover; name: string },
      only?: readonly BatchState[],
    ): Promise<boolean> {
      const from = sourcesOf(batchTransitions, to).filter((state) => !only || only.includes(state));
      if (from.length === 0) return false;
      let ended: EndedBatchItems = { count: 0, byCreatedAt: new Map() };
      const moved = await database.$transaction(
        async (tx) => {
          if (by) await takeRowSoon(tx, batchId);
          const moved = await tx.fundingBatch.updateMany({
            where: { id: batchId, state: { in: [...from] } },
            data: {
              state: to,
              ...(by ? { [by.field]: by.name } : {}),
              // Started when it first runs (stored RUNNING, or approved); a resume keeps that start.
              ...(to === 'RUNNING' && by?.field === 'approvedBy' ? { startedAt: new Date() } : {}),
              ...(to === 'COMPLETED' || to === 'CANCELLED' || to === 'REJECTED' ? { completedAt: new Date() } : {}),
            },
          });
          if (moved.count !== 1) return false;
          if (to === 'CANCELLED' || to === 'REJECTED')
            ended = await batchItems.cancelPendingBatchItems(
              tx,
              batchId,
              by?.name ?? 'ops',
              to === 'REJECTED' ? 'rejected' : 'cancelled',
            );
          await announce(tx, batchId, to);
          // The holds last, right before the commit: the accounts they lock are every funding's too.
          if (ended.count > 0) await batchItems.releaseCancelledBatchItems(tx, batchId);
          return true;
        },
        // Ending a batch of 100,000 items not started: a statement per chunk of rows, then their holds in one.
        { timeout: 300_000, maxWait: 10_000 },
      );
      // Counted once the transaction has committed (a rolled-back cancel counts nothing).
      batchItems.countFinished('FAILED', ended);
      return moved;
    },

    /** Batches, newest first, a page at a time (by created_at and id, from a cursor). */
    list: (query: { state?: BatchState; limit: number; before?: { createdAt: Date; id: string } }) =>
      database.fundingBatch.findMany({
        where: {
          ...(query.state ? { state: query.state } : {}),
          ...(query.before
            ? {
                OR: [
                  { createdAt: { lt: query.before.createdAt } },
                  { createdAt: query.before.createdAt, id: { lt: query.before.id } },
                ],
              }
            : {}),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: query.limit,
      }),

    /** Batches still under way: the sweep restarts the runner of a RUNNING one whose workflow is gone. */
    listActive: () =>
      database.fundingBatch.findMany({
        where: { state: { in: [...activeBatchStates] } },
        select: { id: true, state: true, workflowId: true },
      }),

    /** The items of a batch that are not done: neither final nor in review. */
    async unfinishedItems(batchId: string): Promise<number> {
      const tally = await fundings.batchItemTally(batchId);
      const open: readonly BatchItemStatus[] = ['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING'];
      return tally.filter((row) => open.includes(row.status)).reduce((sum, row) => sum + row.count, 0);
    },
  };
}

export type BatchRecord = ReturnType<typeof createBatchRecord>;
