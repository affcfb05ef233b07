// The claimed fundings record: the set-based moves of fundings a pass claimed, one (a single
// funding's one pass, activities/funding-pass.ts, as a list of one) or many (a batch chunk's): the
// claim of fresh ones (claimPendingItems), their created intents stored with their move to
// EXECUTING in one statement, so stored before anything can execute them (beginExecuteMany), and
// the wallet's final words with their holds settled and their webhooks (finishExecutedMany), in
// one transaction each. Every move is one of the transition table
// (domain/funding.ts fundingTransitions): its SQL guard is the statuses sourcesOf(...) allows,
// narrowed where the write makes only some of those moves, never widened, and each is made only
// under the funding's own claim (its fence in the WHERE). The funding record
// (fundings/funding-record.ts) makes the same moves one at a time for the step path.
import { Prisma, type Funding } from '../generated/prisma/client.ts';
import { fundingErrorMessage, fundingReviewStatus, type FundingStatus } from '../domain/funding.ts';
import { createLedger } from '../ledger/ledger.ts';
export type { FundingCarrier } from './funding-record.ts';
import {
  announceFundings,
  batchRunning,
  carriedBySet,
  type FundingCarrier,
  statusInSql,
  tableMove,
  type FundingRecordDependencies,
} from './funding-record.ts';

const statusIn = statusInSql;

/** The wallet's final words on an executed transfer, which a pass writes for many at once. */
export type WalletFinalStatus = 'APPROVED' | 'DECLINED';

/**
 * An executed funding, not one in review (whose way out is its resolution, as the funding record's finish keeps it).
 */
const notInReview = (status: FundingStatus) => status !== fundingReviewStatus;

/** Every move this module makes, each from the transition table. */
export const claimedFundingMoves = {
  /** The claim of fresh ones: PENDING → CREATING. */
  claim: tableMove('CREATING'),
  /** The created intents stored: CREATING → EXECUTING. */
  beginExecute: tableMove('EXECUTING'),
  /** The wallet's final word: an executed funding → APPROVED or DECLINED. */
  finish: { APPROVED: tableMove('APPROVED', notInReview), DECLINED: tableMove('DECLINED', notInReview) },
} as const;
const moves = claimedFundingMoves;

/** The finish's guard per row: each item only from the sources of the final word it carries (`i.status`). */
const finishedFromWhere = Prisma.sql`(${Prisma.join(
  Object.values(moves.finish).map((move) => Prisma.sql`(i.status = ${move.to} AND f.status ${statusIn(move.from)})`),
  ' OR ',
)})`;

/**
 * What the claimed fundings record needs: the funding record's own dependencies (the ledger and metrics shared with
 * it).
 */
export type ClaimedFundingsRecordDependencies = Pick<FundingRecordDependencies, 'database' | 'metrics' | 'ledger'>;

/** The claim's event for each row it moved, and the rows as the claim left them, with the fence each holds. */
async function claimedRows(
  tx: Prisma.TransactionClient,
  rows: Array<{ id: string; fence: number }>,
): Promise<Array<Funding & { fence: number }>> {
  if (rows.length === 0) return [];
  await tx.$executeRaw`
    INSERT INTO funding_event (funding_id, status, detail, fence)
    SELECT i.id, ${moves.claim.to}::"FundingStatus", 'creating the transfer intent', i.fence
    FROM unnest(${rows.map((row) => row.id)}::uuid[], ${rows.map((row) => row.fence)}::int[]) AS i(id, fence)`;
  const fences = new Map(rows.map((row) => [row.id, row.fence]));
  const claimed = await tx.funding.findMany({ where: { id: { in: rows.map((row) => row.id) } } });
  return claimed.map((row) => ({ ...row, fence: fences.get(row.id)! }));
}

export function createClaimedFundingsRecord(deps: ClaimedFundingsRecordDependencies) {
  const { database } = deps;
  const ledger = deps.ledger ?? createLedger();

  return {
    /**
     * A batch chunk's items taken on at once (activities/funding-chunk.ts fundItemsInOnePass): each
     * fresh PENDING item (CODE or TOKEN) moves to CREATING under a new claim, with its event, in
     * one transaction, as the funding record's claimPending does for one. Rows another transaction
     * holds (a batch's cancel) are skipped, not waited for. Answers the claimed rows.
     */
    async claimPendingItems(
      fundingIds: readonly string[],
      carrier?: FundingCarrier,
    ): Promise<Array<Funding & { fence: number }>> {
      if (fundingIds.length === 0) return [];
      return database.$transaction(async (tx) =>
        claimedRows(
          tx,
          await tx.$queryRaw<Array<{ id: string; fence: number }>>`
          UPDATE funding SET owner_fence = owner_fence + 1, owner_seen_at = now(), status = ${moves.claim.to}::"FundingStatus", updated_at = now(),
                             ${carriedBySet(carrier)}
          WHERE id IN (SELECT id FROM funding
                       WHERE id = ANY(${fundingIds}::uuid[]) AND status ${statusIn(moves.claim.from)} AND transfer_id IS NULL
                         AND NOT cancel_requested AND ${batchRunning}
                       ORDER BY id FOR UPDATE SKIP LOCKED)
            AND status ${statusIn(moves.claim.from)} AND NOT cancel_requested
          RETURNING id::text AS id, owner_fence AS fence`,
        ),
      );
    },

    /**
     * Whether a move holds the batch of any of these fundings now (a cancel ending its items, in one transaction of a
     * minute or more at 100,000): its row locked, so no claim takes its items (batchRunning) until the move is over.
     */
    async batchHeld(fundingIds: readonly string[]): Promise<boolean> {
      if (fundingIds.length === 0) return false;
      const [row] = await database.$queryRaw<Array<{ held: boolean }>>`
        SELECT EXISTS (
          SELECT 1 FROM funding f
          WHERE f.id = ANY(${[...fundingIds]}::uuid[]) AND f.batch_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM funding_batch b WHERE b.id = f.batch_id FOR SHARE OF b SKIP LOCKED)
        ) AS held`;
      return row?.held ?? false;
    },

    /**
     * A lane's chunk takes on the next fundings waiting in its lane, oldest first, at most `limit`
     * (workflows/fund-lane.ts): picked and claimed in one statement, so two chunks of a lane never
     * pick the same funding (a row another transaction holds, a cancel, is skipped), each moved to
     * CREATING under a new claim with its event, as claimPendingItems does for given ones.
     */
    async claimNextInLane(
      lane: number,
      limit: number,
      carrier: FundingCarrier,
    ): Promise<Array<Funding & { fence: number }>> {
      return database.$transaction(async (tx) =>
        claimedRows(
          tx,
          await tx.$queryRaw<Array<{ id: string; fence: number }>>`
          UPDATE funding SET owner_fence = owner_fence + 1, owner_seen_at = now(), status = ${moves.claim.to}::"FundingStatus", updated_at = now(),
                             ${carriedBySet(carrier)}
          WHERE id IN (SELECT id FROM funding
                       WHERE lane = ${lane}::smallint AND status = 'PENDING'::"FundingStatus" AND batch_id IS NULL
                         AND transfer_id IS NULL AND NOT cancel_requested
                       ORDER BY created_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            AND status ${statusIn(moves.claim.from)} AND NOT cancel_requested
          RETURNING id::text AS id, owner_fence AS fence`,
        ),
      );
    },

    /**
     * CREATING → EXECUTING for many at once, each with the transferId of its created intent stored
     * in the same statement (so stored before anything can execute it), only under the item's own
     * claim, with none stored yet and not cancelled: the funding record's storeTransferId and
     * beginExecute for one, together. Answers the ids moved; the others are for the caller to look at one by one.
     */
    async beginExecuteMany(
      items: ReadonlyArray<{ fundingId: string; fence: number; transferId: string; requestReferenceNo: string }>,
    ): Promise<Set<string>> {
      if (items.length === 0) return new Set();
      return database.$transaction(async (tx) => {
        const column = <T>(pick: (item: (typeof items)[number]) => T) => items.map(pick);
        const moved = await tx.$queryRaw<Array<{ id: string }>>`
          UPDATE funding f SET transfer_id = i.transfer_id, status = ${moves.beginExecute.to}::"FundingStatus", updated_at = now()
          FROM unnest(${column((item) => item.fundingId)}::uuid[], ${column((item) => item.fence)}::int[], ${column((item) => item.transferId)}::text[])
            AS i(id, fence, transfer_id)
          WHERE f.id = i.id AND f.owner_fence = i.fence AND f.status ${statusIn(moves.beginExecute.from)} AND f.transfer_id IS NULL AND NOT f.cancel_requested
          RETURNING f.id::text AS id`;
        const ids = new Set(moved.map((row) => row.id));
        const events = items.filter((item) => ids.has(item.fundingId));
        if (events.length > 0) {
          await tx.$executeRaw`
            INSERT INTO funding_event (funding_id, status, request_reference_no, detail, fence)
            SELECT i.id, ${moves.beginExecute.to}::"FundingStatus", i.reference_no, 'transfer ' || i.transfer_id || ' created; executing', i.fence
            FROM unnest(${events.map((item) => item.fundingId)}::uuid[], ${events.map((item) => item.requestReferenceNo)}::text[],
                        ${events.map((item) => item.transferId)}::text[], ${events.map((item) => item.fence)}::int[]) AS i(id, reference_no, transfer_id, fence)`;
        }
        return ids;
      });
    },

    /**
     * The wallet's final word on many executed items at once (APPROVED or DECLINED), as the funding
     * record's finish writes it for one: each moved only from EXECUTING or RECONCILING (never from
     * review, which waits for its resolution: moves.finish) under its own claim, with
     * its event, its hold posted or released and its webhook, in one transaction; counted once.
     * Answers the ids moved; the others are for the caller to look at one by one.
     */
    async finishExecutedMany(
      items: ReadonlyArray<{
        fundingId: string;
        fence: number;
        status: WalletFinalStatus;
        code: string | null;
        requestReferenceNo: string | null;
      }>,
    ): Promise<Set<string>> {
      if (items.length === 0) return new Set();
      const moved = await database.$transaction(async (tx) => {
        const column = <T>(pick: (item: (typeof items)[number]) => T) => items.map(pick);
        const rows = await tx.$queryRaw<Array<{ id: string; status: WalletFinalStatus; created_at: Date }>>`
          UPDATE funding f SET status = i.status::"FundingStatus", error_code = i.code, error_message = i.message, updated_at = now()
          FROM unnest(${column((item) => item.fundingId)}::uuid[], ${column((item) => item.fence)}::int[], ${column((item) => item.status)}::text[],
                      ${column((item) => item.code)}::text[], ${column((item) => (item.code ? fundingErrorMessage(item.code) : null))}::text[])
            AS i(id, fence, status, code, message)
          WHERE f.id = i.id AND f.owner_fence = i.fence AND ${finishedFromWhere}
          RETURNING f.id::text AS id, f.status::text AS status, f.created_at`;
        if (rows.length === 0) return rows;
        const ids = new Set(rows.map((row) => row.id));
        const written = items.filter((item) => ids.has(item.fundingId));
        await tx.$executeRaw`
          INSERT INTO funding_event (funding_id, status, request_reference_no, detail, fence)
          SELECT i.id, i.status::"FundingStatus", i.reference_no, i.code, i.fence
          FROM unnest(${written.map((item) => item.fundingId)}::uuid[], ${written.map((item) => item.status)}::text[], ${written.map((item) => item.requestReferenceNo)}::text[],
                      ${written.map((item) => item.code)}::text[], ${written.map((item) => item.fence)}::int[]) AS i(id, status, reference_no, code, fence)`;
        await ledger.settleMany(
          tx,
          written.map((item) => ({
            fundingId: item.fundingId,
            outcome: item.status === 'APPROVED' ? 'post' : 'release',
          })),
        );
        await announceFundings(tx, [...ids]);
        return rows;
      });
      for (const row of moved) deps.metrics?.fundingFinished(row.status, row.created_at);
      return new Set(moved.map((row) => row.id));
    },
  };
}

export type ClaimedFundingsRecord = ReturnType<typeof createClaimedFundingsRecord>;
