// The batch items record: the set-based writes of fundings, up to 100,000 stored, ended or moved
// at once: a batch's store and its cancel, a batch chunk's claim, and the one pass's created
// intents stored with the move to EXECUTING (beginExecuteMany) and the wallet's final words
// (finishExecutedMany), which a single funding's pass writes here too, as a list of one
// (activities/funding.ts passClaimed). A batch item is a funding: the funding record
// (fundings/funding-record.ts) reads it and writes it one at a time, this module writes many in a
// statement. Every status change here is a move of the same transition table
// (domain/funding.ts fundingTransitions): its SQL guard is the statuses sourcesOf(...) allows,
// narrowed where the write makes only some of those moves, never widened; each move is written
// with its timeline event, and a move to a final state with its hold settled and its webhook, in
// one transaction.
import { Prisma, type Funding } from '../generated/prisma/client.ts';
import { fundingErrorMessage, fundingReviewStatus, fundingTransitions, maskCashInCode, type CreateFundingRequest, type FinalFundingStatus, type FundingStatus } from '../domain/funding.ts';
import type { FundingSource } from '../domain/ledger.ts';
import { toNumeric } from '../domain/money.ts';
import { sourcesOf } from '../domain/transitions.ts';
import { createLedger } from '../ledger/ledger.ts';
import { announceFundings, batchRunning, cashInCodeContext, type FundingRecordDependencies } from './funding-record.ts';

/** One item of a batch, its amount in thousandths, its ids chosen by the batch record. */
export interface NewBatchItem {
  id: string;
  idempotencyKey: string;
  workflowId: string;
  reference: string;
  recipient: CreateFundingRequest['recipient'];
  amount: bigint;
}

/** A batch's items as rows, made a chunk at a time as they are stored (a batch has up to 100,000). */
export interface BatchItemRows {
  count: number;
  /** The items' total, thousandths. */
  total: bigint;
  chunks(size: number): Iterable<NewBatchItem[]>;
}

/** Rows already made (a test's, a script's): one chunk after another. */
export function batchItemRows(items: readonly NewBatchItem[]): BatchItemRows {
  return {
    count: items.length,
    total: items.reduce((sum, item) => sum + item.amount, 0n),
    *chunks(size) {
      for (let start = 0; start < items.length; start += size) yield items.slice(start, start + size);
    },
  };
}

/** The items a batch's end ended: how many, and how many by creation time (ms). */
export interface EndedBatchItems {
  count: number;
  byCreatedAt: Map<number, number>;
}

export interface NewBatchItems {
  batchId: string;
  requestFingerprint: string;
  source: FundingSource;
  currency: string;
  requestedBy: string;
  items: BatchItemRows;
}

/**
 * Items per statement (9 text parameters each, a column's values comma-separated): a statement of
 * 5,000 left the API holding about 40 MiB more heap after a 100,000-item store than statements of
 * 1,000. Sent as arrays (one string per value, which Prisma serialised and pg quoted one by one)
 * the 30,000 items of a store took the API's heap to about 195 MiB; as one text per column, 118.
 */
const BATCH_INSERT_CHUNK = 1000;

/**
 * Items a batch's cancel ends per statement: each chunk's webhooks (the funding views, their JSON)
 * are built in the API's event loop between two statements, which other requests wait behind.
 */
const BATCH_CANCEL_CHUNK = 2000;

/** The wallet's final words on an executed transfer, which a chunk writes for many items at once. */
export type WalletFinalStatus = 'APPROVED' | 'DECLINED';

/** A move of the transition table: where it goes, and the statuses it may come from (the table's, narrowed). */
interface TableMove<To extends FundingStatus> {
  to: To;
  from: FundingStatus[];
}

/**
 * The move to `to` as the table allows it: its sources, narrowed by `among` when the write makes
 * only some of those moves (never widened). A narrowing that leaves nothing is a mistake in the
 * code, not a move that never happens: it throws when the module loads.
 */
function tableMove<To extends FundingStatus>(to: To, among: (from: FundingStatus) => boolean = () => true): TableMove<To> {
  const from = sourcesOf<FundingStatus>(fundingTransitions, to).filter(among);
  if (from.length === 0) throw new RangeError(`no status the table allows to move to ${to} is left`);
  return { to, from };
}

/** A batch's items not started yet: the only ones its end takes (a started item is left to finish). */
const notStarted = (status: FundingStatus) => status === 'PENDING';
/** An executed item, not one in review (whose way out is its resolution, as the funding record's finish keeps it). */
const notInReview = (status: FundingStatus) => status !== fundingReviewStatus;

/** Every move this module makes, each from the transition table. */
export const batchItemMoves = {
  /** The chunk's claim: PENDING → CREATING. */
  claim: tableMove('CREATING'),
  /** The created intents stored: CREATING → EXECUTING. */
  beginExecute: tableMove('EXECUTING'),
  /** A batch's end: its items not started → FAILED (CANCELLED). */
  cancel: tableMove('FAILED', notStarted),
  /** The wallet's final word: an executed item → APPROVED or DECLINED. */
  finish: { APPROVED: tableMove('APPROVED', notInReview), DECLINED: tableMove('DECLINED', notInReview) },
} as const;
const moves = batchItemMoves;

/**
 * A guard's statuses as SQL parameters, `IN ($1, …)`, as Prisma writes the funding record's
 * `status: { in: from }`: PostgreSQL reads a list of one as `=`, so a batch's cancel still walks
 * the (batch_id, status, batch_reference) index in reference order.
 */
function statusIn(statuses: readonly FundingStatus[]): Prisma.Sql {
  return Prisma.sql`IN (${Prisma.join(statuses.map((status) => Prisma.sql`${status}::"FundingStatus"`))})`;
}

/** The finish's guard per row: each item only from the sources of the final word it carries (`i.status`). */
const finishedFromWhere = Prisma.sql`(${Prisma.join(
  Object.values(moves.finish).map((move) => Prisma.sql`(i.status = ${move.to} AND f.status ${statusIn(move.from)})`),
  ' OR ',
)})`;

/** What the batch items record needs: the funding record's own dependencies (the ledger and metrics shared with it). */
export type BatchItemsRecordDependencies = Pick<FundingRecordDependencies, 'database' | 'cipher' | 'metrics' | 'ledger'>;

/**
 * A long write of a batch's items (its store, its cancel) adds to the batch's tally in rows of its
 * own transaction (migration …_funding_batch_tally_slots): it then holds none of the rows the
 * batch's chunks and items' workflows add to while it runs, for tens of seconds, so neither waits
 * for the other (a chunk claiming items the cancel has not reached yet deadlocked with it).
 */
async function tallyInOwnRows(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$queryRaw`SELECT set_config('walletflow.batch_tally_slot', 'transaction', true) AS slot`;
}

export function createBatchItemsRecord(deps: BatchItemsRecordDependencies) {
  const { database } = deps;
  const ledger = deps.ledger ?? createLedger();

  return {
    /**
     * A batch's items, stored in the caller's transaction (the batch record's insert): each a
     * PENDING funding with its batch and reference, its first event and its hold on the batch's
     * source, written set-based (a batch has up to 100,000 items). A source that does not cover
     * the total throws InsufficientFundsError: the caller's transaction stores nothing. The sealed
     * cash-in codes go as hex text, decoded by PostgreSQL: Prisma types a raw array parameter by
     * its first element, and an array of bytes whose first element is null (a TOKEN item first)
     * was sent as base64 text and stored so, unreadable.
     */
    async insertBatchItems(tx: Prisma.TransactionClient, batch: NewBatchItems): Promise<void> {
      const source = batch.source;
      const sourceUser = source.type === 'USER_BALANCE' ? source.partnerUserId : null;
      const detail = `item of batch ${batch.batchId}, requested by ops key ${batch.requestedBy}`;
      await tallyInOwnRows(tx);
      /**
       * A chunk's rows as columns: each column one text of comma-separated values (none can hold a
       * comma: uuids, references of [A-Za-z0-9_-], hex, digits and '*', numerals), split by
       * PostgreSQL: one string per column instead of an array of strings that Prisma serialises and
       * pg quotes item by item. An empty value is NULL.
       */
      const columnsOf = (chunk: readonly NewBatchItem[]) => {
        let ids = '', keys = '', workflows = '', types = '', links = '', sealed = '', masked = '', amounts = '', references = '';
        for (let index = 0; index < chunk.length; index += 1) {
          const item = chunk[index]!;
          const comma = index === 0 ? '' : ',';
          if (item.reference.includes(',') || item.idempotencyKey.includes(',') || item.workflowId.includes(',')) throw new RangeError('a batch item\'s reference, key and workflow id hold no comma');
          ids += comma + item.id;
          keys += comma + item.idempotencyKey;
          workflows += comma + item.workflowId;
          types += comma + item.recipient.type;
          links += comma + (item.recipient.type === 'TOKEN' ? item.recipient.linkId : '');
          sealed += comma + (item.recipient.type === 'CODE' ? Buffer.from(deps.cipher.encrypt(item.recipient.code, cashInCodeContext(item.id))).toString('hex') : '');
          masked += comma + (item.recipient.type === 'CODE' ? maskCashInCode(item.recipient.code) : '');
          amounts += comma + toNumeric(item.amount);
          references += comma + item.reference;
        }
        return { ids, keys, workflows, types, links, sealed, masked, amounts, references };
      };
      /** A chunk's rows and their first events, one statement each, in the caller's transaction. */
      const store = async (c: ReturnType<typeof columnsOf>): Promise<void> => {
        await tx.$executeRaw`
          INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, link_id,
                               cash_in_code_encrypted, cash_in_code_masked, currency, amount, abandoned_transfer_ids,
                               source_partner_user_id, batch_id, batch_reference, updated_at)
          SELECT i.id::uuid, i.idempotency_key, ${batch.requestFingerprint}, i.workflow_id, 'PENDING'::"FundingStatus", i.recipient_type::"RecipientType", NULLIF(i.link_id, '')::uuid,
                 decode(NULLIF(i.code_sealed, ''), 'hex'), NULLIF(i.code_masked, ''), ${batch.currency}, i.amount::numeric, ARRAY[]::text[], ${sourceUser}, ${batch.batchId}::uuid, i.reference, now()
          FROM unnest(string_to_array(${c.ids}, ','), string_to_array(${c.keys}, ','), string_to_array(${c.workflows}, ','), string_to_array(${c.types}, ','),
                      string_to_array(${c.links}, ','), string_to_array(${c.sealed}, ','), string_to_array(${c.masked}, ','), string_to_array(${c.amounts}, ','),
                      string_to_array(${c.references}, ','))
            AS i(id, idempotency_key, workflow_id, recipient_type, link_id, code_sealed, code_masked, amount, reference)`;
        await tx.$executeRaw`
          INSERT INTO funding_event (funding_id, status, detail)
          SELECT unnest(string_to_array(${c.ids}, ',')::uuid[]), 'PENDING'::"FundingStatus", ${detail}`;
      };
      // The next chunk is made (its ids and keys, its codes sealed, its columns joined) while
      // PostgreSQL stores the one before: the API's part and the database's run side by side, each
      // on its core, instead of one after the other. One statement at a time on the transaction.
      let storing: Promise<void> = Promise.resolve();
      try {
        for (const chunk of batch.items.chunks(BATCH_INSERT_CHUNK)) {
          const columns = columnsOf(chunk);
          await storing;
          storing = store(columns);
          // Awaited at the next chunk or below; this only keeps a failure meanwhile from counting as unhandled.
          storing.catch(() => undefined);
          // Lets the statement go out before the next chunk's work takes the event loop.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        await storing;
      } catch (error) {
        // No statement is left running on the transaction when its callback ends with the failure.
        await storing.catch(() => undefined);
        throw error;
      }
      // The holds last, all in one statement made from the rows just stored: the source and
      // IN_FLIGHT accounts, which every funding's hold and final write lock too, are locked only
      // at that statement's end, right before the commit (ledger.holdBatchItems).
      await ledger.holdBatchItems(tx, { batchId: batch.batchId, source, currency: batch.currency });
    },

    /**
     * A batch that ends (cancelled, rejected): its items not yet started (PENDING) end FAILED with
     * code CANCELLED, each with its event and its funding.failed webhook, a chunk of rows per
     * statement, in the caller's transaction (the batch's own move); started items are left to
     * finish. Their holds are released by releaseCancelledBatchItems, which the caller makes its
     * transaction's last step: the rows first and the accounts last, as every funding's move locks
     * them (no deadlock with a single funding's cancel), and the source and IN_FLIGHT accounts
     * locked only from the release to the commit. Answers how many items it ended, counted by
     * creation time (for `countFinished` once the transaction has committed): a batch's items share
     * their batch's, so 100,000 ended items are one entry, not 100,000 rows kept in the API.
     * The chunks walk the batch's items in reference order from where the last one stopped (the
     * index on batch, status and reference): taking the first PENDING rows in id order each time
     * read every row of the batch again, and the versions the earlier chunks had just left.
     */
    async cancelPendingBatchItems(tx: Prisma.TransactionClient, batchId: string, actor: string): Promise<EndedBatchItems> {
      const ended: EndedBatchItems = { count: 0, byCreatedAt: new Map() };
      await tallyInOwnRows(tx);
      let after = '';
      for (;;) {
        // The chunk's rows in the database's order of references: its last one is where the next
        // chunk starts (compared by the database, whatever its collation).
        const rows = await tx.$queryRaw<Array<{ reference: string; id: string | null; createdAt: Date | null }>>`
          WITH chunk AS MATERIALIZED (
            SELECT id, batch_reference FROM funding
            WHERE batch_id = ${batchId}::uuid AND status ${statusIn(moves.cancel.from)} AND batch_reference > ${after}
            ORDER BY batch_reference LIMIT ${BATCH_CANCEL_CHUNK}),
          ended AS (
            UPDATE funding f SET status = ${moves.cancel.to}::"FundingStatus", cancel_requested = true, error_code = 'CANCELLED',
                   error_message = ${fundingErrorMessage('CANCELLED')}, updated_at = now()
            FROM chunk WHERE f.id = chunk.id
              -- Again here, not only in the chunk: a row a pass claimed while this waited for its
              -- lock is read again in its new version and left alone (the chunk's list is not).
              AND f.status ${statusIn(moves.cancel.from)}
            RETURNING f.id, f.created_at)
          SELECT chunk.batch_reference AS reference, ended.id::text AS id, ended.created_at AS "createdAt"
          FROM chunk LEFT JOIN ended ON ended.id = chunk.id ORDER BY chunk.batch_reference`;
        if (rows.length === 0) break;
        after = rows.at(-1)!.reference;
        const ids: string[] = [];
        for (const row of rows) {
          if (row.id === null || row.createdAt === null) continue;
          ids.push(row.id);
          const at = row.createdAt.getTime();
          ended.byCreatedAt.set(at, (ended.byCreatedAt.get(at) ?? 0) + 1);
        }
        if (ids.length === 0) continue;
        ended.count += ids.length;
        await tx.$executeRaw`
          INSERT INTO funding_event (funding_id, status, detail)
          SELECT unnest(${ids}::uuid[]), ${moves.cancel.to}::"FundingStatus", ${`batch cancelled by ops key ${actor}`}`;
        await announceFundings(tx, ids);
      }
      return ended;
    },

    /**
     * The holds of a batch's items that cancelPendingBatchItems ended (its FAILED items cancelled
     * whose hold is still open), released in one statement made from the funding rows
     * (ledger.releaseBatchItems, its entries checked at its own end; no list of ids is sent): the
     * caller's last step before its commit, so the accounts every funding's hold and final write
     * lock are locked from here to the commit only.
     */
    releaseCancelledBatchItems: (tx: Prisma.TransactionClient, batchId: string): Promise<number> => ledger.releaseBatchItems(tx, { batchId }),

    /** Counts fundings a committed transaction ended (a batch's cancel), once, by final state. */
    countFinished(status: FinalFundingStatus, ended: EndedBatchItems): void {
      for (const [at, count] of ended.byCreatedAt) {
        const createdAt = new Date(at);
        for (let index = 0; index < count; index += 1) deps.metrics?.fundingFinished(status, createdAt);
      }
    },

    /**
     * A chunk of a batch's items taken on at once (activities/funding.ts fundItemsInOnePass): each
     * fresh PENDING item (CODE or TOKEN) moves to CREATING under a new claim, with its event, in
     * one transaction, as the funding record's claimPending does for one. Rows another transaction holds (a batch's
     * cancel) are skipped, not waited for: the caller runs those one by one. Answers the claimed rows.
     */
    async claimPendingItems(fundingIds: readonly string[]): Promise<Array<Funding & { fence: number }>> {
      if (fundingIds.length === 0) return [];
      return database.$transaction(async (tx) => {
        const rows = await tx.$queryRaw<Array<{ id: string; fence: number }>>`
          UPDATE funding SET owner_fence = owner_fence + 1, owner_seen_at = now(), status = ${moves.claim.to}::"FundingStatus", updated_at = now()
          WHERE id IN (SELECT id FROM funding
                       WHERE id = ANY(${fundingIds}::uuid[]) AND status ${statusIn(moves.claim.from)} AND transfer_id IS NULL
                         AND NOT cancel_requested AND ${batchRunning}
                       ORDER BY id FOR UPDATE SKIP LOCKED)
            AND status ${statusIn(moves.claim.from)} AND NOT cancel_requested
          RETURNING id::text AS id, owner_fence AS fence`;
        if (rows.length === 0) return [];
        await tx.$executeRaw`
          INSERT INTO funding_event (funding_id, status, detail, fence)
          SELECT i.id, ${moves.claim.to}::"FundingStatus", 'creating the transfer intent', i.fence
          FROM unnest(${rows.map((row) => row.id)}::uuid[], ${rows.map((row) => row.fence)}::int[]) AS i(id, fence)`;
        const fences = new Map(rows.map((row) => [row.id, row.fence]));
        const claimed = await tx.funding.findMany({ where: { id: { in: rows.map((row) => row.id) } } });
        return claimed.map((row) => ({ ...row, fence: fences.get(row.id)! }));
      });
    },

    /**
     * CREATING → EXECUTING for many at once, each with the transferId of its created intent stored
     * in the same statement (so stored before anything can execute it), only under the item's own
     * claim, with none stored yet and not cancelled: the funding record's storeTransferId and
     * beginExecute for one, together. Answers the ids moved; the others are for the caller to look at one by one.
     */
    async beginExecuteMany(items: ReadonlyArray<{ fundingId: string; fence: number; transferId: string; requestReferenceNo: string }>): Promise<Set<string>> {
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
    async finishExecutedMany(items: ReadonlyArray<{ fundingId: string; fence: number; status: WalletFinalStatus; code: string | null; requestReferenceNo: string | null }>): Promise<Set<string>> {
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
        await ledger.settleMany(tx, written.map((item) => ({ fundingId: item.fundingId, outcome: item.status === 'APPROVED' ? 'post' : 'release' })));
        await announceFundings(tx, [...ids]);
        return rows;
      });
      for (const row of moved) deps.metrics?.fundingFinished(row.status, row.created_at);
      return new Set(moved.map((row) => row.id));
    },
  };
}

export type BatchItemsRecord = ReturnType<typeof createBatchItemsRecord>;
