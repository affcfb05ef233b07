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

/** The `where` of a page: what both Prisma models accept for these columns. */
export interface PageWhere<Status extends string> {
  status?: Status;
  /** `lte`: the cursor's createdAt, so the page's index scan starts at the cursor rather than at the newest row. */
  createdAt?: { gte?: Date; lt?: Date; lte?: Date };
  OR?: Array<{ createdAt: { lt: Date } } | { createdAt: Date; id: { lt: string } }>;
}

export interface PageRead<Status extends string> {
  where: PageWhere<Status>;
  orderBy: Array<{ createdAt: 'desc' } | { id: 'desc' }>;
  take: number;
}

export type ListPage<Row> = { kind: 'page'; items: Row[]; nextCursor: string | null } | { kind: 'invalid-cursor' };

/**
 * Reads one page, newest first, after the cursor's row. One row more than the limit is read to
 * know whether a next page exists; ties on createdAt are broken by id, so no row is skipped. The
 * cursor's createdAt is also a plain bound (created_at <= c, beside the exact (created_at, id)
 * condition): with the (status, created_at, id) index it is the scan's start, so a page deep in a
 * long history costs what the first one does (the OR alone was only a filter, and the scan started
 * at the newest row every time).
 */
export async function readListPage<Status extends string, Row extends { createdAt: Date; id: string }>(
  query: ListQuery<Status>,
  findMany: (read: PageRead<Status>) => Promise<Row[]>,
): Promise<ListPage<Row>> {
  const { status, from, to, limit, cursor } = query;
  const after = cursor ? decodeCursor(cursor) : null;
  if (cursor && !after) return { kind: 'invalid-cursor' };
  const where: PageWhere<Status> = {
    ...(status ? { status } : {}),
    ...(from || to || after
      ? {
          createdAt: {
            ...(from ? { gte: new Date(from) } : {}),
            ...(to ? { lt: new Date(to) } : {}),
            ...(after ? { lte: after.createdAt } : {}),
          },
        }
      : {}),
    ...(after
      ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] }
      : {}),
  };
  const rows = await findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: limit + 1 });
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    kind: 'page',
    items,
    nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}

/** Where a sweep's page ended: the last row's creation time and id (oldest first, in that order). */
export interface SweepCursor {
  createdAt: Date;
  id: string;
}

/** A where-clause for the rows after the cursor in (createdAt, id) order; empty for the first page. */
export const afterCursor = (after: SweepCursor | undefined) =>
  after ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] } : {};
