// The funding record: the module that writes a funding's rows (funding, funding_event) one funding
// at a time. Its siblings write many in a statement: the claimed fundings record
// (fundings/claimed-fundings-record.ts) the one pass's created intents stored with the move to
// EXECUTING (beginExecuteMany) and the wallet's final words (finishExecutedMany), which a single
// funding's pass writes there too, as a list of one; the batch items record
// (fundings/batch-items-record.ts) a batch's items stored and ended. Every status change is a move
// that domain's transition table allows, guarded in SQL by the statuses it may come from (built
// from the table, claimPending's too), and written with its timeline event in
// the same transaction; the insert is idempotent on the key; the cash-in code is sealed to its
// funding here (cashInCodeContext, which the batch items record seals its items' codes with).
import { Prisma, type Funding, type FundingEvent } from '../generated/prisma/client.ts';
import {
  cancellableFundingStatuses,
  fundingErrorMessage,
  fundingReviewStatus,
  finalFundingStatuses,
  isFinalFundingStatus,
  fundingTransitions,
  maskCashInCode,
  unfinishedFundingStatuses,
  type CreateFundingRequest,
  type FinalFundingStatus,
  type FundingResolutionOutcome,
  type FundingStatus,
} from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import {
  evidenceOfCall,
  executesOfTarget,
  withRecordedExecutes,
  type ExecuteCallRow,
} from '../reviews/execute-evidence.ts';
import { treasurySource, type FundingSource } from '../domain/ledger.ts';
import { fromNumeric, toNumeric, type Money } from '../domain/money.ts';
import { sourcesOf } from '../domain/transitions.ts';
import { inAdmissionLane } from '../lib/admission.ts';
import { inIndexOrder, type Database } from '../lib/database.ts';
import { readListPage, readPastCursor, type ListPage, type ListQuery, type SweepCursor } from '../lib/list-page.ts';
import type { RowPosition } from './sweep-marks.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { inPages, resealColumn, type RotationCount, type RotationOptions } from '../links/token-rotation.ts';
import { createLedger, type Ledger } from '../ledger/ledger.ts';
import { checkFundingAmount, checkUserLimits, lockPartnerUser, type FundingLimits } from '../ledger/limits.ts';
import { userUsage } from './funding-usage.ts';
import { fundingWebhookEventType } from '../domain/webhook.ts';
import { emitWebhookEvents } from '../webhooks/outbox.ts';
import { fundingView } from './funding-view.ts';
import { actorWords } from '../domain/actor.ts';

/** The first event of a funding, as ops or the embedded app asked for it. */
export const requestedDetail = (requestedBy: string | undefined): string =>
  requestedBy ? `funding requested by ${actorWords(requestedBy)}` : 'funding requested';

/** What a cash-in code is sealed to: a code copied into another funding's row does not decrypt. */
export const cashInCodeContext = (fundingId: string) => `funding:${fundingId}:cash_in_code`;

export const withFundingEvents = { events: { orderBy: { id: 'asc' as const } } };
export type FundingWithEvents = Funding & { events: FundingEvent[] };

export interface NewFunding {
  id: string;
  idempotencyKey: string;
  requestFingerprint: string;
  workflowId: string;
  recipient: CreateFundingRequest['recipient'];
  /** Read once at the edge (domain/money.ts). */
  amount: Money;
  /** The ops key's name when ops asked (contract section 12), for the first event. */
  requestedBy?: string;
  /** Whose money it moves; absent: the TREASURY. */
  source?: FundingSource;
  /** The lane whose run carries it (workflows/fund-lane.contract.ts); absent: its own workflow. */
  lane?: number;
}

/** The timeline event written with a move: the wallet call behind it, and why. */
export interface MoveEvent {
  requestReferenceNo?: string | null;
  detail?: string | null;
}

/**
 * A run's claim on a funding (docs/architecture.md, who owns a funding): the value of the row's
 * owner_fence the run raised it to. Every write of the run carries it and is refused once another
 * run has claimed the funding since; `undefined` is a write by no owning run (ops' cancel, a
 * resolve: ops' word, or the wallet's final state the sweep read).
 */
export type Fence = number | undefined;

/** What a claim saw, atomically with raising the fence: the state the new owner goes on from. */
export interface ClaimedFunding {
  fence: number;
  status: FundingStatus;
  recipientType: 'CODE' | 'TOKEN';
  transferId: string | null;
  cancelRequested: boolean;
}

export interface FinishFunding extends MoveEvent {
  status: FinalFundingStatus;
  code: string | null;
  /** The writer's claim; absent: no owning run (see Fence). */
  fence?: Fence;
  /**
   * A state that says nothing was sent (a refused or cancelled create): written only while no
   * execute can have been sent (PENDING, CREATING), never over a funding another run moved on.
   */
  beforeExecute?: boolean;
}

/** The funding as it stands after a finish, and whether this finish was the one that moved it. */
export interface FinishedFunding {
  moved: boolean;
  status: FundingStatus;
  errorCode: string | null;
  transferId: string | null;
  /** The funding's owner fence now: a writer whose claim is not this one was overtaken. */
  ownerFence: number;
}

/** How a review ends, and on whose word (a key's name, or the reconciliation). */
export interface FundingResolution {
  outcome: FundingResolutionOutcome;
  note: string;
  resolvedBy: string;
  /** A DECLINED read back from the wallet: its 60xx code. */
  code?: string | null;
  /** The wallet call that decided it, when the wallet did. */
  requestReferenceNo?: string | null;
}

export interface FundingRecordDependencies {
  database: Database;
  cipher: TokenCipher;
  /** Counts fundings by final state, once, by whoever moved them there; absent: not counted. */
  metrics?: Pick<Metrics, 'fundingFinished'>;
  /** The partner's ledger (holds, posts, releases); absent: one with no treasury limit. */
  ledger?: Ledger;
  /** Limits checked before a funding is stored; absent: none. */
  limits?: FundingLimits;
}

interface MoveGuard {
  /** Only some of the legal moves (cancel): the table's sources narrowed by this, never widened. */
  among?: (from: FundingStatus) => boolean;
  where?: Prisma.FundingWhereInput;
  data?: Prisma.FundingUpdateManyMutationInput;
  /** More to write, read in the move's transaction under the row's lock, before the move. */
  lockedData?: (tx: Prisma.TransactionClient) => Promise<Prisma.FundingUpdateManyMutationInput>;
  /** The writer's claim: the move happens only while the funding's owner_fence still has it. */
  fence?: Fence;
}

/**
 * The workflow run that claims fundings for its chunk pass when it is not the funding's own: a
 * batch's runner or a lane (recorded on the funding, for its page's link to that run).
 */
export interface FundingCarrier {
  workflowId: string;
  runId: string;
  /** The activity whose chunk claims it (a lane's: its retried attempt hands over what it left). */
  chunk?: string;
}

/** The claim's SET of who carries the funding: the carrier's run, or left as it is. */
/**
 * A batch item a chunk claimed without recording itself as its carrier (carried_by): the previous release's chunk
 * (360981c), which never stamps owner_seen_at, still running on an old worker during the upgrade (the migration set
 * owner_seen_at to the row's updated_at, the batch's store for its items: hours ago). Its every move stamps updated_at,
 * so it is idle only once that too is older than `idleSince`; today's chunks record their carrier and beat through
 * owner_seen_at.
 */
const previousReleaseChunkIdle = (idleSince: Date) =>
  Prisma.sql`AND (batch_id IS NULL OR carried_by IS NOT NULL OR updated_at < ${idleSince})`;

export const carriedBySet = (carrier: FundingCarrier | undefined) =>
  carrier
    ? Prisma.sql`carried_by = ${carrier.workflowId}, carried_by_run_id = ${carrier.runId}, carried_by_chunk = ${carrier.chunk ?? null}`
    : Prisma.sql`carried_by = carried_by`;

/**
 * A fresh funding starts only while nothing holds it back: a single funding always, a batch's item only while its
 * batch is RUNNING (never awaiting approval, paused, cancelled or rejected). The claim of one (claimPending) and the
 * chunk's (batch items record, claimPendingItems) both check it; the step path's move to CREATING checks
 * `startsWhileRunning`.
 *
 * A funding outside a batch, or an item of a RUNNING batch no move holds: a cancel (or a pause) under way has the
 * batch's row locked until it commits, minutes for 100,000 items, and a claim meanwhile takes none of its items (they
 * stay PENDING, for the cancel to end or the runner to take once the move is over). Read without the lock, the batch
 * was RUNNING until the cancel committed, and chunks went on starting the items it had not yet reached.
 */
export const batchRunning = Prisma.sql`(batch_id IS NULL OR EXISTS (SELECT 1 FROM funding_batch b WHERE b.id = funding.batch_id AND b.state = 'RUNNING'::"FundingBatchState" FOR SHARE OF b SKIP LOCKED))`;

/**
 * The step path's PENDING → CREATING (markCreating) as `batchRunning` has it, read as committed: an item its batch's
 * end left PENDING (a stray the sweep finds) is not created and executed by its own workflow, which then ends it
 * cancelled.
 */
const startsWhileRunning: Prisma.FundingWhereInput = {
  OR: [{ batchId: null }, { batch: { is: { state: 'RUNNING' } } }],
};

/**
 * The webhooks of moves (contract-decisions section 13), in the moves' own transaction: each
 * funding that is now final or in review writes its event to the outbox, with the funding as the
 * ops API shows it. One move's (`announce`) or many at once (a chunk's final words, a batch's
 * cancel: the batch items record).
 */
export async function announceFundings(tx: Prisma.TransactionClient, fundingIds: readonly string[]): Promise<void> {
  const fundings = await tx.funding.findMany({ where: { id: { in: [...fundingIds] } }, include: withFundingEvents });
  await emitWebhookEvents(
    tx,
    fundings.flatMap((funding) => {
      const type = fundingWebhookEventType(funding.status);
      return type ? [{ type, fundingId: funding.id, data: fundingView(funding) }] : [];
    }),
  );
}

/**
 * The statuses of a funding not final, as literals: the partial indexes funding_sweep_candidates_idx
 * (the sweep's candidates) and funding_holding_by_source_idx (the fundings holding money on a source)
 * say the same list (test/integration/sweep-candidates.test.ts holds them together), and a query
 * serves from one only when its own condition says it in constants.
 */
export const unfinishedStatusLiterals = statusLiterals(unfinishedFundingStatuses);

/** The final statuses as SQL literals, from the transition table (domain/funding.ts): for queries written in SQL. */
export const finalStatusLiterals = statusLiterals(finalFundingStatuses);

/** Statuses as SQL constants (`'APPROVED', 'DECLINED'`): safe, they are the domain's own names. */
function statusLiterals(statuses: readonly FundingStatus[]): Prisma.Sql {
  return Prisma.raw(statuses.map((status) => `'${status}'`).join(', '));
}

/**
 * A guard's statuses as SQL parameters, `IN ($1, …)`, as Prisma writes `status: { in: from }`:
 * PostgreSQL reads a list of one as `=`, so an index on the status is walked as for an equality.
 */
export function statusInSql(statuses: readonly FundingStatus[]): Prisma.Sql {
  return Prisma.sql`IN (${Prisma.join(statuses.map((status) => Prisma.sql`${status}::"FundingStatus"`))})`;
}

/** A move of the transition table: where it goes, and the statuses it may come from (the table's, narrowed). */
export interface TableMove<To extends FundingStatus> {
  to: To;
  from: FundingStatus[];
}

/**
 * The move to `to` as the table allows it: its sources, narrowed by `among` when the write makes
 * only some of those moves (never widened). A narrowing that leaves nothing is a mistake in the
 * code, not a move that never happens: it throws when the module loads.
 */
export function tableMove<To extends FundingStatus>(
  to: To,
  among: (from: FundingStatus) => boolean = () => true,
): TableMove<To> {
  const from = sourcesOf<FundingStatus>(fundingTransitions, to).filter(among);
  if (from.length === 0) throw new RangeError(`no status the table allows to move to ${to} is left`);
  return { to, from };
}

/** The one pass's claim of a fresh funding (claimPending): to CREATING from the table's sources of it. */
const claimMove = { to: 'CREATING' as const, from: sourcesOf(fundingTransitions, 'CREATING') };

/** The row condition of a fenced write: the claim still stands. */
const fenced = (fence: Fence): Prisma.FundingWhereInput => (fence === undefined ? {} : { ownerFence: fence });

/** A batch's items by status (a cancelled item apart), with their amounts: its rows of funding_batch_tally. */
export type BatchItemTally = Array<{ status: FundingStatus | 'CANCELLED'; count: number; amount: bigint }>;

export function createFundingRecord(deps: FundingRecordDependencies) {
  const { database } = deps;
  const ledger = deps.ledger ?? createLedger();

  /**
   * The one place a funding's hold is settled, in the transaction of the move to a final state:
   * APPROVED posts it, DECLINED, REJECTED and FAILED release it; a status that is not final (a
   * funding in review) keeps it. finish, cancel and a later resolve all come through here;
   * idempotent by the hold (a second settle of one hold writes nothing).
   */
  async function settleHold(tx: Prisma.TransactionClient, fundingId: string, status: FundingStatus): Promise<void> {
    if (!isFinalFundingStatus(status)) return;
    await ledger.settleFunding(tx, fundingId, status === 'APPROVED' ? 'post' : 'release');
  }

  /** The guarded UPDATE of a move: true when this call moved the funding. */
  async function updateStatus(
    tx: Prisma.TransactionClient,
    fundingId: string,
    to: FundingStatus,
    guard: MoveGuard = {},
  ): Promise<boolean> {
    const from = sourcesOf(fundingTransitions, to).filter((status) => !guard.among || guard.among(status));
    const moved = await tx.funding.updateMany({
      where: { id: fundingId, status: { in: from }, ...guard.where, ...fenced(guard.fence) },
      data: { status: to, ...guard.data },
    });
    return moved.count === 1;
  }

  async function appendEvent(
    tx: Prisma.TransactionClient,
    fundingId: string,
    status: FundingStatus,
    event: MoveEvent,
    fence: Fence,
  ) {
    await tx.fundingEvent.create({
      data: {
        fundingId,
        status,
        requestReferenceNo: event.requestReferenceNo ?? null,
        detail: event.detail ?? null,
        fence: fence ?? null,
      },
    });
  }

  /** The funding as a finish or a resolution left it; counted by whoever moved it, once. */
  async function readFinished(fundingId: string, moved: boolean, status: FinalFundingStatus): Promise<FinishedFunding> {
    const funding = await database.funding.findUniqueOrThrow({
      where: { id: fundingId },
      select: { status: true, errorCode: true, transferId: true, createdAt: true, ownerFence: true },
    });
    // A retried activity, or a funding cancelled by ops, is not counted twice.
    if (moved) deps.metrics?.fundingFinished(status, funding.createdAt);
    return {
      moved,
      status: funding.status,
      errorCode: funding.errorCode,
      transferId: funding.transferId,
      ownerFence: funding.ownerFence,
    };
  }

  /**
   * The webhook a move emits (contract-decisions section 13): a final state or NEEDS_REVIEW writes
   * its event to the outbox in the move's own transaction, with the funding as the ops API shows it.
   */
  async function announce(tx: Prisma.TransactionClient, fundingId: string, status: FundingStatus): Promise<void> {
    if (fundingWebhookEventType(status)) await announceFundings(tx, [fundingId]);
  }

  /**
   * Moves the funding to `to` if the table allows it from where it stands, with its event (and, to a final state, its
   * hold settled and its webhook).
   */
  function move(fundingId: string, to: FundingStatus, event: MoveEvent, guard?: MoveGuard): Promise<boolean> {
    return database.$transaction(async (tx) => {
      const locked = guard?.lockedData ? await guard.lockedData(tx) : undefined;
      const moved = await updateStatus(
        tx,
        fundingId,
        to,
        locked ? { ...guard, data: { ...guard?.data, ...locked } } : guard,
      );
      if (moved) {
        await appendEvent(tx, fundingId, to, event, guard?.fence);
        await settleHold(tx, fundingId, to);
        await announce(tx, fundingId, to);
      }
      return moved;
    });
  }

  /**
   * Takes the funding on (when `condition` holds): raises its owner fence and answers the state it
   * stands in, in one statement, so nothing written by an earlier owner after this can count
   * (every write of theirs checks the fence). Null when there is no such funding (or the condition
   * does not hold).
   */
  async function claimWhere(
    fundingId: string,
    condition: Prisma.Sql,
    alsoSet: Prisma.Sql = Prisma.empty,
  ): Promise<ClaimedFunding | null> {
    const rows = await database.$queryRaw<
      Array<{
        fence: number;
        status: FundingStatus;
        recipient_type: 'CODE' | 'TOKEN';
        transfer_id: string | null;
        cancel_requested: boolean;
      }>
    >`
      UPDATE funding SET owner_fence = owner_fence + 1, owner_seen_at = now() ${alsoSet} WHERE id = ${fundingId}::uuid ${condition}
      RETURNING owner_fence AS fence, status::text AS status, recipient_type::text AS recipient_type, transfer_id, cancel_requested`;
    const row = rows[0];
    return row
      ? {
          fence: row.fence,
          status: row.status,
          recipientType: row.recipient_type,
          transferId: row.transfer_id,
          cancelRequested: row.cancel_requested,
        }
      : null;
  }

  /**
   * Every execute call sent for a funding, as the wallet call audit has them: those behind the moves on its timeline
   * (an unknown execute is on record as its move to RECONCILING, with the call's Request-Reference-No), read by the
   * indexed reference; and every execute of its transfer (reviews/execute-evidence.ts), one its timeline never heard
   * of too (a retried activity's first try, cut off; a chunk that lost its lease after its executes went out).
   */
  async function executesOnRecord(fundingId: string): Promise<WalletCallEvidence[]> {
    const rows = await database.$queryRaw<ExecuteCallRow[]>`
      SELECT DISTINCT w.id, w.started_at AS at, w.request_reference_no AS reference, w.http_status, w.outcome, w.error_code
      FROM funding_event e JOIN wallet_call w ON w.request_reference_no = e.request_reference_no
      WHERE e.funding_id = ${fundingId}::uuid AND w.operation = 'transfers.execute'
      ORDER BY w.started_at, w.id`;
    const onTimeline = rows.map((row) => evidenceOfCall(row, 'transfers.execute'));
    const { transferId } = await database.funding.findUniqueOrThrow({
      where: { id: fundingId },
      select: { transferId: true },
    });
    return transferId === null
      ? onTimeline
      : withRecordedExecutes(onTimeline, await executesOfTarget(database, 'transfers.execute', transferId));
  }

  /**
   * A batch's FAILED items, a cancelled one apart (the view's CANCELLED: FAILED with the code CANCELLED), in reference
   * order from a cursor: from the partial index of them (prisma/migrations/20261205190000_funding_batch_failed_items),
   * its predicate in the text as the index has it, so that the planner can match it (Prisma's parameters it cannot).
   */
  function failedBatchItemsPage(batchId: string, afterReference: string | undefined, limit: number) {
    return database.$queryRaw<
      Array<{
        id: string;
        batchReference: string | null;
        status: FundingStatus;
        errorCode: string | null;
        amount: Prisma.Decimal;
        currency: string;
      }>
    >`
      SELECT f.id::text AS id, f.batch_reference AS "batchReference", f.status::text AS status,
             f.error_code AS "errorCode", f.amount, f.currency
      FROM funding f
      WHERE f.batch_id = ${batchId}::uuid AND f.status = 'FAILED' AND f.error_code IS DISTINCT FROM 'CANCELLED'
        AND f.batch_id IS NOT NULL
        ${afterReference ? Prisma.sql`AND f.batch_reference > ${afterReference}` : Prisma.empty}
      ORDER BY f.batch_reference LIMIT ${limit}`;
  }

  /** The fundings of `ids`, in (created_at, id) order. */
  async function byIdsInOrder(ids: string[]): Promise<Funding[]> {
    if (ids.length === 0) return [];
    return database.funding.findMany({ where: { id: { in: ids } }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  }

  /**
   * The batches' items by status, as `batchItemTally` answers each: a state's figures are the sum over its slots (the
   * batch's shared rows, its store's, its cancel's).
   */
  async function batchItemTallies(
    batchIds: readonly string[],
    db: Prisma.TransactionClient | Database = database,
  ): Promise<Map<string, BatchItemTally>> {
    const tallies = new Map<string, BatchItemTally>(batchIds.map((id) => [id, []]));
    if (batchIds.length === 0) return tallies;
    const rows = await db.$queryRaw<
      Array<{ batch_id: string; status: FundingStatus | 'CANCELLED'; count: bigint; amount: Prisma.Decimal }>
    >`
      SELECT batch_id::text AS batch_id, status, SUM(count)::bigint AS count, SUM(amount) AS amount
      FROM funding_batch_tally WHERE batch_id = ANY(${[...batchIds]}::uuid[])
      GROUP BY batch_id, status HAVING SUM(count) > 0 ORDER BY batch_id, status`;
    for (const row of rows)
      tallies
        .get(row.batch_id)
        ?.push({ status: row.status, count: Number(row.count), amount: fromNumeric(row.amount) });
    return tallies;
  }

  return {
    find: (fundingId: string) => database.funding.findUnique({ where: { id: fundingId } }),
    get: (fundingId: string) => database.funding.findUniqueOrThrow({ where: { id: fundingId } }),
    findWithEvents: (fundingId: string): Promise<FundingWithEvents | null> =>
      database.funding.findUnique({ where: { id: fundingId }, include: withFundingEvents }),
    /** The funding stored under a key: called after an insert found the key taken. */
    getByIdempotencyKey: (idempotencyKey: string): Promise<FundingWithEvents> =>
      database.funding.findUniqueOrThrow({ where: { idempotencyKey }, include: withFundingEvents }),
    /** The funding stored under a key, if any: called before a refusal that comes before the store. */
    findByIdempotencyKey: (idempotencyKey: string): Promise<FundingWithEvents | null> =>
      database.funding.findUnique({ where: { idempotencyKey }, include: withFundingEvents }),

    /** A page of GET /ops/fundings, newest first. */
    listPage: (query: ListQuery<FundingStatus>): Promise<ListPage<FundingWithEvents>> =>
      readListPage(query, (read) => database.funding.findMany({ ...read, include: withFundingEvents })),

    /**
     * Fundings not final whose owner has shown nothing since `idleSince` (docs/architecture.md, who
     * owns a funding), oldest first: the sweep's work. Their age does not count: a batch's items
     * are as old as the batch, and a live chunk's items are seen every few seconds.
     */
    listUnfinished: async ({
      idleSince,
      after,
      limit,
    }: {
      idleSince: Date;
      after?: SweepCursor;
      limit: number;
    }): Promise<Funding[]> => {
      const fromCursor = after
        ? Prisma.sql`AND (created_at, id) > (${after.createdAt}, ${after.id}::uuid)`
        : Prisma.empty;
      // funding_sweep_candidates_idx from the cursor on: the fundings in flight, except a batch's
      // items waiting their turn (the batch's to start, not stuck), however many those are.
      const rows = await database.$queryRaw<Array<{ id: string }>>`
        SELECT id FROM funding
        WHERE status IN (${unfinishedStatusLiterals}) AND (status <> 'PENDING' OR batch_id IS NULL)
          AND owner_seen_at < ${idleSince} ${previousReleaseChunkIdle(idleSince)} ${fromCursor}
        ORDER BY created_at, id LIMIT ${limit}`;
      return byIdsInOrder(rows.map((row) => row.id));
    },

    /**
     * A batch's items still waiting (PENDING) although their batch is no longer under way: never
     * expected (a batch ends once its items have), so swept like a funding without its workflow.
     * The batches are found through their tallies, their items through the batch index.
     */
    listStrayBatchItems: async ({
      idleSince,
      after,
      limit,
    }: {
      idleSince: Date;
      after?: SweepCursor;
      limit: number;
    }): Promise<Funding[]> => {
      const batches = await database.$queryRaw<Array<{ batch_id: string }>>`
        SELECT t.batch_id::text AS batch_id FROM funding_batch_tally t JOIN funding_batch b ON b.id = t.batch_id
        WHERE t.status = 'PENDING' AND b.state NOT IN ('AWAITING_APPROVAL', 'RUNNING', 'PAUSED')
        GROUP BY t.batch_id HAVING sum(t.count) > 0`;
      if (batches.length === 0) return [];
      return readPastCursor(
        {
          where: {
            batchId: { in: batches.map((row) => row.batch_id) },
            status: 'PENDING' as const,
            ownerSeenAt: { lt: idleSince },
          },
          order: 'asc',
          after,
          take: limit,
        },
        (read) => database.funding.findMany(read),
      );
    },

    /**
     * FAILED fundings that had a transfer, finished since `since`, oldest update first from `after` on, a page at a
     * time: the sweep checks none executed after all. Through funding_failed_with_transfer_idx (migration
     * 20261205230100), its predicate in constants; the order is the columns' (f.id a uuid). Sorting is off for the
     * statement (`inIndexOrder`): the planner took the FAILED fundings by status and time instead, and read every
     * FAILED one without a transfer in the window. A position before `since` (a round's, kept while the window slid on
     * with the sweeps) is not sent: PostgreSQL begins a scan with a row comparison at the comparison, and would walk
     * every FAILED funding between the two.
     */
    async listFailedWithTransfer({
      since,
      after,
      limit,
    }: {
      since: Date;
      after?: RowPosition | null;
      limit: number;
    }): Promise<Funding[]> {
      const fromPosition =
        after && after.at.getTime() >= since.getTime()
          ? Prisma.sql`AND (f.updated_at, f.id) > (${after.at}, ${after.id}::uuid)`
          : Prisma.empty;
      const rows = await inIndexOrder(
        database,
        (db) => db.$queryRaw<Array<{ id: string; updatedAt: Date }>>`
          SELECT f.id::text AS id, f.updated_at AS "updatedAt" FROM funding f
          WHERE f.status = 'FAILED' AND f.transfer_id IS NOT NULL AND f.updated_at >= ${since} ${fromPosition}
          ORDER BY f.updated_at, f.id LIMIT ${limit}`,
      );
      if (rows.length === 0) return [];
      const found = new Map(
        (await database.funding.findMany({ where: { id: { in: rows.map((row) => row.id) } } })).map((row) => [
          row.id,
          row,
        ]),
      );
      // In the page's order, each with the updated_at the page read (the position the sweep keeps): a row written
      // again meanwhile is asked about as it is now, and the next page still follows this one.
      return rows.flatMap((row) => {
        const funding = found.get(row.id);
        return funding ? [{ ...funding, updatedAt: row.updatedAt }] : [];
      });
    },

    /** The funding's cash-in code in clear, for the create call only; null when it has none. */
    cashInCodeOf(funding: Pick<Funding, 'id' | 'cashInCodeEncrypted'>): string | null {
      return funding.cashInCodeEncrypted
        ? deps.cipher.decrypt(funding.cashInCodeEncrypted, cashInCodeContext(funding.id))
        : null;
    },

    /**
     * Stores a new funding in PENDING with its first event and its hold on the source, in one
     * transaction; false when the key is taken. Concurrent requests with one key meet at the
     * unique index: one inserts, the others wait for it and insert nothing (ON CONFLICT DO
     * NOTHING), then read its row. A limit or a source that does not cover the amount throws
     * (LimitRefusal, InsufficientFundsError) and nothing is stored.
     */
    async insert(funding: NewFunding): Promise<boolean> {
      const { id, recipient, amount } = funding;
      const source = funding.source ?? treasurySource;
      const sourceUser = source.type === 'USER_BALANCE' ? source.partnerUserId : null;
      const { thousandths } = amount;
      // One user's fundings wait for each other in line before they take a connection (lib/admission.ts);
      // the advisory lock below then serialises them across API processes too.
      const inserted = await inAdmissionLane(sourceUser === null ? null : `partner-user:${sourceUser}`, () =>
        database.$transaction(async (tx) => {
          // One user's fundings one after another: the limits' counts and the hold see each other.
          if (sourceUser !== null) await lockPartnerUser(tx, sourceUser);
          const count = await tx.$executeRaw`
          INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, link_id,
                               cash_in_code_encrypted, cash_in_code_masked, currency, amount, abandoned_transfer_ids, source_partner_user_id, lane, updated_at)
          VALUES (${id}::uuid, ${funding.idempotencyKey}, ${funding.requestFingerprint}, ${funding.workflowId}, 'PENDING'::"FundingStatus",
                  ${recipient.type}::"RecipientType", ${recipient.type === 'TOKEN' ? recipient.linkId : null}::uuid,
                  ${recipient.type === 'CODE' ? Buffer.from(deps.cipher.encrypt(recipient.code, cashInCodeContext(id))) : null},
                  ${recipient.type === 'CODE' ? maskCashInCode(recipient.code) : null}, ${amount.currency},
                  ${toNumeric(thousandths)}::numeric, ARRAY[]::text[], ${sourceUser}, ${funding.lane ?? null}::smallint, now())
          ON CONFLICT (idempotency_key) DO NOTHING`;
          if (count !== 1) return count;
          if (deps.limits) {
            checkFundingAmount(deps.limits, thousandths, amount.currency);
            // The new row is excluded by its own check: counted as "this one", not twice.
            if (sourceUser !== null)
              checkUserLimits(
                deps.limits,
                await userUsage(tx, sourceUser, deps.limits.timeZone, id),
                thousandths,
                amount.currency,
              );
          }
          await appendEvent(tx, id, 'PENDING', { detail: requestedDetail(funding.requestedBy) }, undefined);
          // The hold last: the source and IN_FLIGHT accounts, which every funding's hold locks too,
          // are locked from it to the commit only (as a batch's holds are).
          await ledger.hold(tx, { fundingId: id, source, currency: amount.currency, amount: thousandths });
          return count;
        }),
      );
      return inserted === 1;
    },

    /**
     * Final fundings whose hold is still open (a crash between the two, or a hand-made repair): the sweep's work. Those
     * updated since `since`, by (status, updated_at): what finished lately, whatever the history.
     */
    listFinalWithOpenHold: (read: { since: Date; limit: number }) =>
      database.$queryRaw<Array<{ id: string; status: FundingStatus }>>`
        SELECT f.id::text AS id, f.status::text AS status FROM funding f
        WHERE f.status IN (${finalStatusLiterals}) AND f.updated_at >= ${read.since}
          AND EXISTS (
            SELECT 1 FROM ledger_transaction h
            WHERE h.funding_id = f.id AND h.kind = 'HOLD'
              AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id))
        ORDER BY f.updated_at, f.id LIMIT ${read.limit}`,

    /**
     * As listFinalWithOpenHold, by the hold's id in (after, through], in its order, with that id: the sweep's pass over
     * every hold ever written, once a day, a range at a time.
     */
    listFinalWithOpenHoldAmong: (read: { after: bigint; through: bigint; limit: number }) =>
      database.$queryRaw<Array<{ id: string; status: FundingStatus; holdId: bigint }>>`
        SELECT f.id::text AS id, f.status::text AS status, h.id AS "holdId"
        FROM ledger_transaction h JOIN funding f ON f.id = h.funding_id
        WHERE h.id > ${read.after} AND h.id <= ${read.through}
          AND h.kind = 'HOLD' AND f.status IN (${finalStatusLiterals})
          AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id)
        ORDER BY h.id LIMIT ${read.limit}`,

    /**
     * The first ledger transaction's id after `after`, null past the last: where the sweep's pass over every hold
     * reads on (ids no transaction took, a rolled-back batch's, are stepped over, not read a range at a time).
     */
    ledgerTransactionIdAfter: async (after: bigint): Promise<bigint | null> =>
      (
        await database.$queryRaw<Array<{ id: bigint | null }>>`
          SELECT min(id) AS id FROM ledger_transaction WHERE id > ${after}`
      )[0]?.id ?? null,

    /** Settles the hold of a final funding by its status, under its row lock; what was done. */
    settleFinalHold: (fundingId: string) =>
      database.$transaction(async (tx) => {
        const rows = await tx.$queryRaw<
          Array<{ status: FundingStatus }>
        >`SELECT status::text AS status FROM funding WHERE id = ${fundingId}::uuid FOR UPDATE`;
        const status = rows[0]?.status;
        if (!status || !isFinalFundingStatus(status)) return 'none' as const;
        return ledger.settleFunding(tx, fundingId, status === 'APPROVED' ? 'post' : 'release');
      }),

    /** Takes the funding on (claimWhere); null when there is no such funding. */
    claim: (fundingId: string): Promise<ClaimedFunding | null> => claimWhere(fundingId, Prisma.empty),

    /**
     * The sweep's claim: as `claim`, only while the funding's owner has still shown nothing since
     * `idleSince` (in the same statement, so an owner seen since it was listed keeps it). Null
     * when there is no such funding or its owner is alive. A funding still waiting in a lane (PENDING) leaves it in
     * the same statement: the sweep hands it to its own workflow, and a lane that works again must not claim it
     * beside that run (each would create an intent). One a lane had claimed keeps its lane: its chunk reads it so.
     */
    claimIdle: (fundingId: string, idleSince: Date): Promise<ClaimedFunding | null> =>
      claimWhere(
        fundingId,
        Prisma.sql`AND owner_seen_at < ${idleSince} ${previousReleaseChunkIdle(idleSince)}`,
        Prisma.sql`, lane = CASE WHEN status = 'PENDING'::"FundingStatus" THEN NULL ELSE lane END`,
      ),

    /**
     * The sweep asked the wallet about a funding in review, which stays in review: seen now (as a beat), so the next
     * sweeps ask the reviews not asked since before this one again (activities/sweep.ts askAboutReview).
     */
    seeReviewAsked: async (fundingId: string): Promise<void> => {
      await database.$executeRaw`
        UPDATE funding SET owner_seen_at = now()
        WHERE id = ${fundingId}::uuid AND status = ${fundingReviewStatus}::"FundingStatus"`;
    },

    /** Fundings waiting for a person, longest waiting first: the sweep lists the first of them for ops. */
    listInReview: (limit: number) =>
      database.funding.findMany({
        where: { status: fundingReviewStatus },
        orderBy: { updatedAt: 'asc' },
        take: limit,
        select: { id: true, transferId: true, updatedAt: true, reviewReason: true },
      }),
    /** How many fundings wait for a person. */
    countInReview: () => database.funding.count({ where: { status: fundingReviewStatus } }),

    /**
     * A batch chunk's beat for the items it runs (activities/batch.ts): their owner is alive, so
     * the sweep leaves them alone. Only items under way: a final one, or one still PENDING, has
     * no owner to show.
     */
    seeOwners: async (fundingIds: readonly string[]): Promise<void> => {
      if (fundingIds.length === 0) return;
      await database.$executeRaw`
        UPDATE funding SET owner_seen_at = now()
        WHERE id = ANY(${fundingIds}::uuid[]) AND status IN ('CREATING'::"FundingStatus", 'EXECUTING'::"FundingStatus", 'RECONCILING'::"FundingStatus")`;
    },

    /**
     * The one pass's start: PENDING → CREATING and the claim, in one statement with its event;
     * the fence it claimed, or null when the funding is not a fresh PENDING one (someone else
     * took it on, or it was cancelled).
     */
    claimPending: (
      fundingId: string,
      options: { skipLocked?: boolean; carrier?: FundingCarrier } = {},
    ): Promise<number | null> =>
      database.$transaction(async (tx) => {
        // skipLocked (a batch chunk's item): a row another transaction holds (the batch's cancel,
        // which holds its items for its whole transaction) is not claimed rather than waited on.
        const unheld = options.skipLocked
          ? Prisma.sql`AND id IN (SELECT id FROM funding WHERE id = ${fundingId}::uuid FOR UPDATE SKIP LOCKED)`
          : Prisma.empty;
        const rows = await tx.$queryRaw<Array<{ fence: number }>>`
          UPDATE funding SET owner_fence = owner_fence + 1, owner_seen_at = now(), status = ${claimMove.to}::"FundingStatus", updated_at = now(),
                             ${carriedBySet(options.carrier)}
          WHERE id = ${fundingId}::uuid AND status ${statusInSql(claimMove.from)} AND transfer_id IS NULL AND NOT cancel_requested
            AND ${batchRunning} ${unheld}
          RETURNING owner_fence AS fence`;
        const fence = rows[0]?.fence;
        if (fence === undefined) return null;
        await appendEvent(tx, fundingId, claimMove.to, { detail: 'creating the transfer intent' }, fence);
        return fence;
      }),

    /** The funding's owner fence now: whether a claim still stands. */
    fenceOf: async (fundingId: string): Promise<number> =>
      (await database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { ownerFence: true } })).ownerFence,

    /**
     * The claims many fundings stand under now, read in one statement (a pass reads them right before its executes).
     */
    fencesOf: async (fundingIds: readonly string[]): Promise<Map<string, number>> =>
      new Map(
        (
          await database.funding.findMany({
            where: { id: { in: [...fundingIds] } },
            select: { id: true, ownerFence: true },
          })
        ).map((row) => [row.id, row.ownerFence]),
      ),

    /** A move with no columns of its own (PENDING → CREATING, EXECUTING → RECONCILING), by the funding's owner. */
    move: (fundingId: string, to: 'CREATING' | 'RECONCILING', event: MoveEvent, fence?: Fence) =>
      move(fundingId, to, event, { fence, ...(to === 'CREATING' ? { where: startsWhileRunning } : {}) }),

    /**
     * Keeps the transferId of a created intent: stored only while the funding is CREATING, not
     * cancelled and has none yet. Otherwise (cancelled meanwhile, or a concurrent attempt stored
     * one first) the intent is kept on record in abandoned_transfer_ids, never executed. Answers
     * the transferId the funding executes, if any.
     */
    async storeTransferId(
      fundingId: string,
      transferId: string,
      fence?: Fence,
    ): Promise<{ stored: boolean; transferId: string | null }> {
      const stored = await database.$transaction(async (tx) => {
        const updated = await tx.funding.updateMany({
          where: { id: fundingId, transferId: null, status: 'CREATING', cancelRequested: false, ...fenced(fence) },
          data: { transferId },
        });
        if (updated.count === 1) return true;
        await tx.funding.update({ where: { id: fundingId }, data: { abandonedTransferIds: { push: transferId } } });
        return false;
      });
      if (stored) return { stored, transferId };
      const current = await database.funding.findUniqueOrThrow({
        where: { id: fundingId },
        select: { transferId: true },
      });
      return { stored, transferId: current.transferId };
    },

    /** An intent the funding will never execute (its create answer did not match the request): kept on record. */
    keepUnexecuted: (fundingId: string, transferId: string) =>
      database.funding
        .update({ where: { id: fundingId }, data: { abandonedTransferIds: { push: transferId } } })
        .then(() => undefined),

    /**
     * CREATING → EXECUTING, only with a stored transferId and unless cancelled: the other side of
     * the race with `cancel`, which the database decides. The event carries the create call's
     * Request-Reference-No: the created intent is what moved the funding on.
     */
    beginExecute(fundingId: string, createRequestReferenceNo: string | null, fence?: Fence): Promise<boolean> {
      return database.$transaction(async (tx) => {
        if (
          !(await updateStatus(tx, fundingId, 'EXECUTING', {
            where: { cancelRequested: false, transferId: { not: null } },
            fence,
          }))
        )
          return false;
        const { transferId } = await tx.funding.findUniqueOrThrow({
          where: { id: fundingId },
          select: { transferId: true },
        });
        await appendEvent(
          tx,
          fundingId,
          'EXECUTING',
          { requestReferenceNo: createRequestReferenceNo, detail: `transfer ${transferId} created; executing` },
          fence,
        );
        return true;
      });
    },

    /** Ops' cancel: FAILED/CANCELLED only while no execute can have been sent (see beginExecute). */
    async cancel(funding: Pick<Funding, 'id' | 'createdAt'>, actor?: string): Promise<boolean> {
      const cancelled = await move(
        funding.id,
        'FAILED',
        { detail: actor ? `cancelled by ${actorWords(actor)}` : 'cancelled by ops' },
        {
          among: (from) => (cancellableFundingStatuses as readonly FundingStatus[]).includes(from),
          where: { cancelRequested: false },
          data: { cancelRequested: true, errorCode: 'CANCELLED', errorMessage: fundingErrorMessage('CANCELLED') },
        },
      );
      if (cancelled) deps.metrics?.fundingFinished('FAILED', funding.createdAt);
      return cancelled;
    },

    /**
     * Writes the workflow's final state once; a funding already final keeps its own (answered as it
     * stands), and a funding in review is left to its resolution.
     */
    async finish(fundingId: string, input: FinishFunding): Promise<FinishedFunding> {
      const { code } = input;
      const moved = await move(fundingId, input.status, input, {
        among: (from) =>
          from !== fundingReviewStatus && (!input.beforeExecute || from === 'PENDING' || from === 'CREATING'),
        data: { errorCode: code, errorMessage: code ? fundingErrorMessage(code) : null },
        fence: input.fence,
      });
      return readFinished(fundingId, moved, input.status);
    },

    /**
     * → NEEDS_REVIEW with the evidence (contract section 11): why no outcome could be known, and
     * every wallet call behind the doubt. Nothing is released or posted: the funding keeps what it
     * holds until a resolution or the wallet's final word.
     */
    async parkForReview(
      fundingId: string,
      reason: string,
      evidence: WalletCallEvidence[],
      fence?: Fence,
    ): Promise<boolean> {
      const last = evidence.at(-1);
      // The parker's own calls, and every execute on the funding's record, whoever sent it (a batch
      // chunk's, an earlier run's): a person reviewing sees each execute that may have landed.
      const all = withRecordedExecutes(evidence, await executesOnRecord(fundingId));
      const data = { reviewReason: reason.slice(0, 500), reviewEvidence: all as unknown as Prisma.InputJsonValue };
      const event = { requestReferenceNo: last?.requestReferenceNo ?? null, detail: reason.slice(0, 500) };
      // From CREATING: the one park before any execute (a create answer that does not match the request). An intent
      // an earlier attempt stored meanwhile (its answer came late) was never executed either: kept on record, not as
      // the funding's transfer, so the review cannot approve a transfer that never moved money.
      return move(fundingId, fundingReviewStatus, event, {
        data,
        lockedData: async (tx) => {
          const [row] = await tx.$queryRaw<Array<{ status: string; transfer_id: string | null }>>`
            SELECT status::text AS status, transfer_id FROM funding WHERE id = ${fundingId}::uuid FOR UPDATE`;
          if (row?.status !== 'CREATING' || !row.transfer_id) return {};
          const unexecuted = `; transfer ${row.transfer_id}, created by an earlier attempt, was not executed either`;
          return {
            transferId: null,
            abandonedTransferIds: { push: row.transfer_id },
            reviewReason: `${reason.slice(0, 500 - unexecuted.length)}${unexecuted}`,
          };
        },
        fence,
      });
    },

    /**
     * The only way out of NEEDS_REVIEW: ops' resolution (APPROVED or FAILED) or the wallet's own
     * final state read back by the sweep (APPROVED or DECLINED), with who and why. Through the
     * waiting workflow it carries that run's fence; without one (its workflow is gone) the
     * resolve claims the funding in the same statement, so no earlier owner writes after it.
     */
    async resolve(fundingId: string, resolution: FundingResolution, fence?: Fence): Promise<FinishedFunding> {
      const code = resolution.outcome === 'FAILED' ? 'RESOLVED_FAILED' : (resolution.code ?? null);
      const detail = `resolved ${resolution.outcome} by ${resolution.resolvedBy}: ${resolution.note}`.slice(0, 500);
      const moved = await move(
        fundingId,
        resolution.outcome,
        { requestReferenceNo: resolution.requestReferenceNo ?? null, detail },
        {
          among: (from) => from === fundingReviewStatus,
          data: {
            resolvedOutcome: resolution.outcome,
            resolvedBy: resolution.resolvedBy.slice(0, 128),
            resolvedNote: resolution.note.slice(0, 500),
            resolvedAt: new Date(),
            errorCode: code,
            errorMessage: code ? fundingErrorMessage(code) : null,
            ...(fence === undefined ? { ownerFence: { increment: 1 }, ownerSeenAt: new Date() } : {}),
          },
          fence,
        },
      );
      return readFinished(fundingId, moved, resolution.outcome);
    },

    /** The next items of a batch that have not started, after `afterId` (ids in order). */
    /**
     * A lane's fundings waiting for its run, in arrival order, leaving out `under` (those its run
     * has under way): the partial index funding_lane_pending_idx holds only these.
     */
    hasPendingInLane: async (lane: number): Promise<boolean> =>
      (
        await database.$queryRaw<Array<{ id: string }>>`
          SELECT id::text AS id FROM funding
          WHERE lane = ${lane}::smallint AND status = 'PENDING'::"FundingStatus" AND batch_id IS NULL LIMIT 1`
      ).length > 0,

    /**
     * What a chunk claimed and left neither final, nor PENDING, nor in review (an earlier attempt of
     * it that died or was replaced): its retried attempt hands these to their own workflows.
     */
    leftByChunk: async (carrier: Required<FundingCarrier>): Promise<string[]> =>
      (
        await database.$queryRaw<Array<{ id: string }>>`
          SELECT id::text AS id FROM funding
          WHERE carried_by = ${carrier.workflowId} AND carried_by_run_id = ${carrier.runId} AND carried_by_chunk = ${carrier.chunk}
            AND status IN ('CREATING', 'EXECUTING', 'RECONCILING')`
      ).map((row) => row.id),

    /**
     * Single fundings in flight now (PENDING to RECONCILING, outside a batch's waiting items, not in
     * review): how the API tells load (fundings/funding-paths.ts). Read through the sweep's
     * candidates index, which holds only fundings in flight.
     */
    inFlight: async (): Promise<number> =>
      Number(
        (
          await database.$queryRaw<Array<{ count: bigint }>>`
            SELECT count(*) AS count FROM funding
            WHERE status IN ('PENDING', 'CREATING', 'EXECUTING', 'RECONCILING') AND (status <> 'PENDING' OR batch_id IS NULL)`
        )[0]?.count ?? 0,
      ),

    /**
     * A batch's PENDING items after `afterId`, in id order: the runner's next page, from the partial index of them
     * (prisma/migrations/20261205170000_funding_batch_pending_items), the status a constant in the text so that the
     * planner can match the index's predicate (a parameter it cannot). Sorting is off for the statement
     * (`inIndexOrder`): the planner reckons a large batch's PENDING items a few dozen, and would fetch them all and
     * sort rather than read the index, whose order is the page's.
     */
    nextPendingBatchItems: (batchId: string, afterId: string | null, limit: number) =>
      inIndexOrder(
        database,
        (db) => db.$queryRaw<Array<{ id: string; workflowId: string }>>`
          SELECT f.id::text AS id, f.workflow_id AS "workflowId" FROM funding f
          WHERE f.batch_id = ${batchId}::uuid AND f.status = 'PENDING' AND f.batch_id IS NOT NULL
            ${afterId ? Prisma.sql`AND f.id > ${afterId}::uuid` : Prisma.empty}
          ORDER BY f.batch_id, f.id LIMIT ${limit}`,
      ),

    /**
     * A batch's items by status (a cancelled item apart: FAILED with code CANCELLED), with their
     * amounts: the batch's rows of funding_batch_tally, which the funding table's triggers keep in
     * the same statement as each item's write (prisma/migrations/20261128002457_funding_batch_tally),
     * so a 100,000-item batch's progress is a few rows, not a count of its items on every view. Read
     * in the caller's transaction when given one (it sees that transaction's own writes).
     */
    async batchItemTally(batchId: string, db: Prisma.TransactionClient | Database = database): Promise<BatchItemTally> {
      return (await batchItemTallies([batchId], db)).get(batchId) ?? [];
    },

    /** The tallies of several batches (a page of the batch list) in one statement, by batch id. */
    batchItemTallies,

    /** A page of a batch's items in reference order, from a cursor (the last reference seen). */
    batchItemsPage: (
      batchId: string,
      query: { status?: FundingStatus | 'CANCELLED'; afterReference?: string; limit: number },
    ) =>
      query.status === 'FAILED'
        ? failedBatchItemsPage(batchId, query.afterReference, query.limit)
        : database.funding.findMany({
            where: {
              batchId,
              // As the batch's view and counts name them: a FAILED item whose code is CANCELLED is CANCELLED, not
              // FAILED (failedBatchItemsPage reads the others).
              ...(query.status === 'CANCELLED'
                ? { status: 'FAILED', errorCode: 'CANCELLED' }
                : query.status
                  ? { status: query.status }
                  : {}),
              ...(query.afterReference ? { batchReference: { gt: query.afterReference } } : {}),
            },
            orderBy: { batchReference: 'asc' },
            take: query.limit,
            select: { id: true, batchReference: true, status: true, errorCode: true, amount: true, currency: true },
          }),

    /**
     * A timeline entry that changes nothing (the sweep started a missing workflow), written only while the funding's
     * owner fence is still `whileFence`: once the run it started claimed the funding, a late entry (its writer paused)
     * would stand after that run's moves, and is dropped.
     */
    recordEvent: (fundingId: string, status: FundingStatus, detail: string, whileFence: number) =>
      database.$executeRaw`
        INSERT INTO funding_event (funding_id, status, detail)
        SELECT id, ${status}::"FundingStatus", ${detail} FROM funding
        WHERE id = ${fundingId}::uuid AND owner_fence = ${whileFence}`.then(() => undefined),
  };
}

export type FundingRecord = ReturnType<typeof createFundingRecord>;

/**
 * Key rotation (`walletflow rotate-keys`): every stored cash-in code re-sealed under the ring's
 * first key, each only if unchanged meanwhile. A write to the funding table, so it lives here.
 */
export async function reencryptCashInCodes(
  database: Database,
  cipher: TokenCipher,
  options: RotationOptions = {},
): Promise<RotationCount> {
  const rows = inPages(
    (after, take) =>
      database.funding.findMany({
        where: { cashInCodeEncrypted: { not: null }, ...(after === null ? {} : { id: { gt: after } }) },
        orderBy: { id: 'asc' },
        take,
        select: { id: true, cashInCodeEncrypted: true },
      }),
    (row) => row.id,
    options,
  );
  return resealColumn(cipher, rows, {
    sealed: (row) => row.cashInCodeEncrypted,
    context: (row) => cashInCodeContext(row.id),
    writeIfUnchanged: async (row, resealed) =>
      (
        await database.funding.updateMany({
          where: { id: row.id, cashInCodeEncrypted: row.cashInCodeEncrypted },
          data: { cashInCodeEncrypted: resealed },
        })
      ).count,
  });
}
