// The batch items record: the set-based writes of a batch's items, up to 100,000 fundings stored
// or ended at once (a batch's store and its cancel). A batch item is a funding: the funding record
// (fundings/funding-record.ts) reads it and writes it one at a time, the claimed fundings record
// (fundings/claimed-fundings-record.ts) moves those a pass claimed, and this module stores and
// ends a batch's many in a statement. Every status change here is a move of the same transition table
// (domain/funding.ts fundingTransitions): its SQL guard is the statuses sourcesOf(...) allows,
// narrowed where the write makes only some of those moves, never widened; each move is written
// with its timeline event, and a move to a final state with its hold settled and its webhook, in
// one transaction.
import type { Prisma } from '../generated/prisma/client.ts';
import {
  fundingErrorMessage,
  maskCashInCode,
  type CreateFundingRequest,
  type FinalFundingStatus,
  type FundingStatus,
} from '../domain/funding.ts';
import type { FundingSource } from '../domain/ledger.ts';
import { toNumeric } from '../domain/money.ts';
import { createLedger } from '../ledger/ledger.ts';
import {
  announceFundings,
  cashInCodeContext,
  statusInSql,
  tableMove,
  type FundingRecordDependencies,
} from './funding-record.ts';
import { actorWords } from '../domain/actor.ts';

const statusIn = statusInSql;

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

/** A batch's items not started yet: the only ones its end takes (a started item is left to finish). */
const notStarted = (status: FundingStatus) => status === 'PENDING';

/** Every move this module makes, each from the transition table. */
export const batchItemMoves = {
  /** A batch's end: its items not started → FAILED (CANCELLED). */
  cancel: tableMove('FAILED', notStarted),
} as const;
const moves = batchItemMoves;

/** What the batch items record needs: the funding record's own dependencies (the ledger and metrics shared with it). */
export type BatchItemsRecordDependencies = Pick<
  FundingRecordDependencies,
  'database' | 'cipher' | 'metrics' | 'ledger'
>;

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
      const detail = `item of batch ${batch.batchId}, requested by ${actorWords(batch.requestedBy)}`;
      await tallyInOwnRows(tx);
      /**
       * A chunk's rows as columns: each column one text of comma-separated values (none can hold a
       * comma: uuids, references of [A-Za-z0-9_-], hex, digits and '*', numerals), split by
       * PostgreSQL: one string per column instead of an array of strings that Prisma serialises and
       * pg quotes item by item. An empty value is NULL.
       */
      const columnsOf = (chunk: readonly NewBatchItem[]) => {
        let ids = '',
          keys = '',
          workflows = '',
          types = '',
          links = '',
          sealed = '',
          masked = '',
          amounts = '',
          references = '';
        for (let index = 0; index < chunk.length; index += 1) {
          const item = chunk[index]!;
          const comma = index === 0 ? '' : ',';
          if (item.reference.includes(',') || item.idempotencyKey.includes(',') || item.workflowId.includes(','))
            throw new RangeError("a batch item's reference, key and workflow id hold no comma");
          ids += comma + item.id;
          keys += comma + item.idempotencyKey;
          workflows += comma + item.workflowId;
          types += comma + item.recipient.type;
          links += comma + (item.recipient.type === 'TOKEN' ? item.recipient.linkId : '');
          sealed +=
            comma +
            (item.recipient.type === 'CODE'
              ? Buffer.from(deps.cipher.encrypt(item.recipient.code, cashInCodeContext(item.id))).toString('hex')
              : '');
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
    async cancelPendingBatchItems(
      tx: Prisma.TransactionClient,
      batchId: string,
      actor: string,
      /** How the batch ended, as each item's event says it: cancelled, or rejected by the checker before it ran. */
      ending: 'cancelled' | 'rejected' = 'cancelled',
    ): Promise<EndedBatchItems> {
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
          SELECT unnest(${ids}::uuid[]), ${moves.cancel.to}::"FundingStatus", ${`batch ${ending} by ${actorWords(actor)}`}`;
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
    releaseCancelledBatchItems: (tx: Prisma.TransactionClient, batchId: string): Promise<number> =>
      ledger.releaseBatchItems(tx, { batchId }),

    /** Counts fundings a committed transaction ended (a batch's cancel), once, by final state. */
    countFinished(status: FinalFundingStatus, ended: EndedBatchItems): void {
      for (const [at, count] of ended.byCreatedAt) {
        const createdAt = new Date(at);
        for (let index = 0; index < count; index += 1) deps.metrics?.fundingFinished(status, createdAt);
      }
    },
  };
}

export type BatchItemsRecord = ReturnType<typeof createBatchItemsRecord>;
