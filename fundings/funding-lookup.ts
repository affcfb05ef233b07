// Finding fundings and batches for the ops console's search and pages: each read one index lookup
// (an id, an idempotency key, a transfer id) or a bounded page of an index range (a batch item's
// reference; a cash-in code's masked form, newest first). Codes are searched by their masked
// form only (`*****67`, as stored): a sealed code is never opened to find one. Reads of the
// funding and funding_batch tables, offered to the API (docs/architecture.md, reads across
// capabilities).
import type { FundingStatus } from '../domain/funding.ts';
import { Prisma } from '../generated/prisma/client.ts';
import { unfinishedStatusLiterals } from './funding-record.ts';
import type { BatchState } from '../domain/funding-batch.ts';
import { storedAmount, type Amount } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { readListPage, type ListPage } from '../lib/list-page.ts';
import { isUuid } from '../domain/ids.ts';

/** A funding as a search result lists it. */
export interface FundingHit {
  fundingId: string;
  status: FundingStatus;
  amount: Amount;
  /** The masked cash-in code, or the link paid. */
  recipient: { type: 'CODE'; masked: string } | { type: 'TOKEN'; linkId: string };
  batchId: string | null;
  batchReference: string | null;
  createdAt: Date;
}

/** A batch as a search result lists it. */
export interface BatchHit {
  batchId: string;
  name: string;
  state: BatchState;
  total: { count: number; amount: Amount };
  createdAt: Date;
}

const hitColumns = {
  id: true,
  status: true,
  amount: true,
  currency: true,
  recipientType: true,
  cashInCodeMasked: true,
  linkId: true,
  batchId: true,
  batchReference: true,
  createdAt: true,
} as const;

type HitRow = {
  id: string;
  status: FundingStatus;
  amount: { toFixed(digits?: number): string };
  currency: string;
  recipientType: 'CODE' | 'TOKEN';
  cashInCodeMasked: string | null;
  linkId: string | null;
  batchId: string | null;
  batchReference: string | null;
  createdAt: Date;
};

const hitOf = (row: HitRow): FundingHit => ({
  fundingId: row.id,
  status: row.status,
  amount: storedAmount(row),
  recipient:
    row.recipientType === 'CODE'
      ? { type: 'CODE', masked: row.cashInCodeMasked ?? '*******' }
      : { type: 'TOKEN', linkId: row.linkId ?? '' },
  batchId: row.batchId,
  batchReference: row.batchReference,
  createdAt: row.createdAt,
});

/**
 * The fundings `text` names exactly: by id, idempotency key or transfer id (each a unique or
 * indexed column: at most a few rows).
 */
export async function fundingsNamedBy(database: Database, text: string): Promise<FundingHit[]> {
  const byId = isUuid(text)
    ? database.funding.findMany({ where: { id: text.toLowerCase() }, select: hitColumns })
    : Promise.resolve([]);
  const byKey =
    text.length <= 255
      ? database.funding.findMany({ where: { idempotencyKey: text }, select: hitColumns })
      : Promise.resolve([]);
  const byTransfer =
    text.length <= 100
      ? database.funding.findMany({
          where: { transferId: text },
          select: hitColumns,
          orderBy: { createdAt: 'desc' },
          take: 20,
        })
      : Promise.resolve([]);
  const rows = (await Promise.all([byId, byKey, byTransfer])).flat();
  const seen = new Set<string>();
  return rows.filter((row) => !seen.has(row.id) && seen.add(row.id)).map(hitOf);
}

/** A cash-in code's masked form from what a person types: its last two digits, or the masked form itself. */
export function maskedCodeQuery(text: string): string | null {
  const match = /^\**(\d{2})$/.exec(text);
  return match ? `*****${match[1]}` : null;
}

/**
 * Fundings to a cash-in code with this masked form, newest first, a page at a time (the (masked, created_at, id)
 * index).
 */
export async function fundingsByMaskedCode(
  database: Database,
  masked: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<ListPage<FundingHit>> {
  const read = await readListPage<FundingStatus, HitRow>(page, (list) =>
    database.funding.findMany({ ...list, where: { ...list.where, cashInCodeMasked: masked }, select: hitColumns }),
  );
  return read.kind === 'page' ? { ...read, items: read.items.map(hitOf) } : read;
}

/** Batch items with this reference in any batch, newest first, a page at a time (the batch_reference index). */
export async function fundingsByBatchReference(
  database: Database,
  reference: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<ListPage<FundingHit>> {
  const read = await readListPage<FundingStatus, HitRow>(page, (list) =>
    database.funding.findMany({ ...list, where: { ...list.where, batchReference: reference }, select: hitColumns }),
  );
  return read.kind === 'page' ? { ...read, items: read.items.map(hitOf) } : read;
}

/**
 * The batches `text` names exactly (by id or idempotency key), and those of the given ids (a reference's items'
 * batches).
 */
export async function batchesNamedBy(
  database: Database,
  text: string,
  alsoIds: readonly string[] = [],
): Promise<BatchHit[]> {
  const ids = [...new Set([...(isUuid(text) ? [text.toLowerCase()] : []), ...alsoIds])].slice(0, 50);
  const rows = await database.fundingBatch.findMany({
    where: {
      OR: [...(ids.length > 0 ? [{ id: { in: ids } }] : []), ...(text.length <= 255 ? [{ idempotencyKey: text }] : [])],
    },
    select: { id: true, name: true, state: true, totalCount: true, totalAmount: true, currency: true, createdAt: true },
    orderBy: { createdAt: 'desc' },
    take: 50,
  });
  return rows.map((row) => ({
    batchId: row.id,
    name: row.name,
    state: row.state,
    total: { count: row.totalCount, amount: storedAmount({ amount: row.totalAmount, currency: row.currency }) },
    createdAt: row.createdAt,
  }));
}

/** What a funding's page shows beyond its view: where its workflow runs, its key, its batch. */
export interface FundingFacts {
  workflowId: string;
  idempotencyKey: string;
  abandonedTransferIds: string[];
  batch: { batchId: string; name: string; reference: string | null } | null;
}

export async function fundingFacts(database: Database, fundingId: string): Promise<FundingFacts | null> {
  if (!isUuid(fundingId)) return null;
  const row = await database.funding.findUnique({
    where: { id: fundingId },
    select: {
      workflowId: true,
      idempotencyKey: true,
      abandonedTransferIds: true,
      batchReference: true,
      batch: { select: { id: true, name: true } },
    },
  });
  if (!row) return null;
  return {
    workflowId: row.workflowId,
    idempotencyKey: row.idempotencyKey,
    abandonedTransferIds: row.abandonedTransferIds,
    batch: row.batch ? { batchId: row.batch.id, name: row.batch.name, reference: row.batchReference } : null,
  };
}

/**
 * The fundings still holding money on a source (not final: their hold is neither posted nor
 * released), newest first, at most `limit`: a partner user's (`partnerUserId`) or the treasury's
 * (null). Read through funding_holding_by_source_idx (migration 20261205220000), which holds only
 * them by source in (created_at, id) order, the statuses constants in the text so that the planner
 * can match its predicate: `limit` entries read, however many fundings the source has had. The
 * order names the source first: for the treasury's (IS NULL, not an equality) only that index
 * gives it. By (created_at, id) alone, the index of every funding gave it too, and with statistics
 * taken while a large treasury batch waited the planner reckoned it as cheap, and read the history.
 */
export async function fundingsHoldingOn(
  database: Database,
  partnerUserId: string | null,
  limit: number,
): Promise<FundingHit[]> {
  const source =
    partnerUserId === null
      ? Prisma.sql`f.source_partner_user_id IS NULL`
      : Prisma.sql`f.source_partner_user_id = ${partnerUserId}`;
  // The order is the columns' (f.id a uuid), not the text id the statement answers.
  const ids = await database.$queryRaw<Array<{ id: string }>>`
    SELECT f.id::text AS id FROM funding f
    WHERE f.status IN (${unfinishedStatusLiterals}) AND ${source}
    ORDER BY f.source_partner_user_id DESC, f.created_at DESC, f.id DESC LIMIT ${limit}`;
  if (ids.length === 0) return [];
  const rows = await database.funding.findMany({
    where: { id: { in: ids.map((row) => row.id) } },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: hitColumns,
  });
  return rows.map(hitOf);
}
