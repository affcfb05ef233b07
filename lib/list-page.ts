// One list page of a table ordered newest first (fundings, payments): the query the ops API takes
// (status, date range, limit, cursor) and the read that turns it into a page and its next cursor.
// The records pass their own findMany; the filter and the cursor arithmetic are written once here.
import { z } from 'zod';
import { decodeCursor, encodeCursor, listDateSchema } from './page-cursor.ts';

/** GET /ops/<list>: filters and paging, for a list whose rows have one of `statuses`. */
export const listQuerySchema = <const Status extends string>(statuses: readonly [Status, ...Status[]]) =>
  z
    .object({
      status: z.enum(statuses, { error: `status must be one of ${statuses.join(', ')}` }).optional(),
      from: listDateSchema('from').optional(),
      to: listDateSchema('to').optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
      cursor: z.string().max(200).optional(),
    })
    .strict();

export interface ListQuery<Status extends string> {
  status?: Status | undefined;
  from?: string | undefined;
  to?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** The createdAt bounds of a read past a cursor: a list's date filter, and where the cursor is. */
export interface CreatedAtBounds {
  gte?: Date;
  lt?: Date;
  gt?: Date;
  equals?: Date;
}

/** A read of rows in (createdAt, id) order: the caller's own `where`, the bounds, the order and how many. */
export interface PageRead<Where extends object> {
  where: Where & { createdAt?: CreatedAtBounds; id?: { lt: string } | { gt: string } };
  orderBy: Array<{ createdAt: 'asc' | 'desc' } | { id: 'asc' | 'desc' }>;
  take: number;
}

export type ListPage<Row> = { kind: 'page'; items: Row[]; nextCursor: string | null } | { kind: 'invalid-cursor' };

/**
 * Reads one page, newest first, after the cursor's row. One row more than the limit is read to
 * know whether a next page exists; ties on createdAt are broken by id, so no row is skipped.
 */
export async function readListPage<Status extends string, Row extends { createdAt: Date; id: string }>(
  query: ListQuery<Status>,
  findMany: (read: PageRead<{ status?: Status }>) => Promise<Row[]>,
): Promise<ListPage<Row>> {
  const { status, from, to, limit, cursor } = query;
  const after = cursor ? decodeCursor(cursor) : null;
  if (cursor && !after) return { kind: 'invalid-cursor' };
  const where: { status?: Status } = status ? { status } : {};
  const rows = await readPastCursor(
    {
      where,
      createdAt: { ...(from ? { gte: new Date(from) } : {}), ...(to ? { lt: new Date(to) } : {}) },
      order: 'desc',
      ...(after ? { after } : {}),
      take: limit + 1,
    },
    findMany,
  );
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    kind: 'page',
    items,
    nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}

/**
 * Up to `take` rows past the cursor's in (createdAt, id) order, oldest first (`asc`) or newest first, within a
 * createdAt range. Read as two ranges of a (…, created_at, id) index, each starting where the cursor is: first the
 * rows tied with the cursor's createdAt past its id, then those past its createdAt. One condition
 * `created_at < c OR (created_at = c AND id < i)` leaves `id < i` a filter: in a tie (a batch's items share their
 * created_at, 100,000 of them) every page read again every row of the tie before its own, so paging through a batch
 * cost the square of its size.
 */
export async function readPastCursor<Where extends object, Row>(
  input: {
    where: Where;
    createdAt?: { gte?: Date; lt?: Date };
    order: 'asc' | 'desc';
    after?: SweepCursor | undefined;
    take: number;
  },
  findMany: (read: PageRead<Where>) => Promise<Row[]>,
): Promise<Row[]> {
  const { where, createdAt = {}, order, after, take } = input;
  const orderBy: PageRead<Where>['orderBy'] = [{ createdAt: order }, { id: order }];
  const bounded = (bounds: CreatedAtBounds) => (Object.keys(bounds).length > 0 ? { createdAt: bounds } : {});
  if (!after) return findMany({ where: { ...where, ...bounded(createdAt) }, orderBy, take });
  const tied = await findMany({
    where: {
      ...where,
      createdAt: { ...createdAt, equals: after.createdAt },
      id: order === 'desc' ? { lt: after.id } : { gt: after.id },
    },
    orderBy,
    take,
  });
  if (tied.length >= take) return tied;
  const past: CreatedAtBounds =
    order === 'desc'
      ? { ...createdAt, lt: createdAt.lt && createdAt.lt < after.createdAt ? createdAt.lt : after.createdAt }
      : { ...createdAt, gt: after.createdAt };
  return [...tied, ...(await findMany({ where: { ...where, createdAt: past }, orderBy, take: take - tied.length }))];
}

/** Where a sweep's page ended: the last row's creation time and id (oldest first, in that order). */
export interface SweepCursor {
  createdAt: Date;
  id: string;
}
