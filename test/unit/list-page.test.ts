// Reading past a (createdAt, id) cursor (lib/list-page.ts) against an in-memory table that answers the reads as
// PostgreSQL would: every row once, in order, however many share a time, in either order, within a date filter.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readListPage, readPastCursor, type CreatedAtBounds, type PageRead } from '../../lib/list-page.ts';

interface Row {
  id: string;
  createdAt: Date;
  status: 'A' | 'B';
}

/** 400 rows over 12 instants (a batch's items share theirs), in two statuses. */
const rows: Row[] = Array.from({ length: 400 }, (_, index) => ({
  id: randomUUID(),
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index % 12 === 0 ? 0 : index % 12)),
  status: index % 3 === 0 ? 'B' : 'A',
}));

const inBounds = (at: Date, bounds: CreatedAtBounds | undefined) =>
  !bounds ||
  ((bounds.gte === undefined || at >= bounds.gte) &&
    (bounds.lt === undefined || at < bounds.lt) &&
    (bounds.gt === undefined || at > bounds.gt) &&
    (bounds.equals === undefined || at.getTime() === bounds.equals.getTime()));

const compare = (order: 'asc' | 'desc') => (a: Row, b: Row) => {
  const by = a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return order === 'asc' ? by : -by;
};

/** The table's findMany: the where, the order, the take; and how many reads were made. */
function table() {
  const reads: PageRead<{ status?: 'A' | 'B' }>[] = [];
  const findMany = (read: PageRead<{ status?: 'A' | 'B' }>): Promise<Row[]> => {
    reads.push(read);
    const order = (read.orderBy[0] as { createdAt: 'asc' | 'desc' }).createdAt;
    const id = read.where.id as { lt?: string; gt?: string } | undefined;
    return Promise.resolve(
      rows
        .filter(
          (row) =>
            (read.where.status === undefined || row.status === read.where.status) &&
            inBounds(row.createdAt, read.where.createdAt) &&
            (id?.lt === undefined || row.id < id.lt) &&
            (id?.gt === undefined || row.id > id.gt),
        )
        .sort(compare(order))
        .slice(0, read.take),
    );
  };
  return { findMany, reads };
}

describe('reading past a cursor', () => {
  it('pages newest first through ties, each row once and in order, within a status and a date filter', async () => {
    for (const limit of [1, 7, 33, 500])
      for (const filter of [
        {},
        { status: 'A' as const },
        { from: '2026-01-01T00:00:03Z', to: '2026-01-01T00:00:09Z' },
      ] as Array<{ status?: 'A'; from?: string; to?: string }>) {
        const expected = rows
          .filter(
            (row) =>
              (filter.status === undefined || row.status === filter.status) &&
              inBounds(row.createdAt, {
                ...(filter.from ? { gte: new Date(filter.from) } : {}),
                ...(filter.to ? { lt: new Date(filter.to) } : {}),
              }),
          )
          .sort(compare('desc'))
          .map((row) => row.id);
        const { findMany } = table();
        const seen: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = await readListPage({ ...filter, limit, ...(cursor ? { cursor } : {}) }, findMany);
          if (page.kind !== 'page') throw new Error('a page');
          seen.push(...page.items.map((row) => row.id));
          if (!page.nextCursor) break;
          cursor = page.nextCursor;
        }
        expect(seen, `limit ${limit}, ${JSON.stringify(filter)}`).toEqual(expected);
      }
  });

  it('pages oldest first (the sweep) through ties, each row once and in order, below a createdAt bound', async () => {
    const before = new Date(Date.UTC(2026, 0, 1, 0, 0, 10));
    for (const take of [1, 5, 40]) {
      const expected = rows
        .filter((row) => row.createdAt < before)
        .sort(compare('asc'))
        .map((row) => row.id);
      const { findMany } = table();
      const seen: Row[] = [];
      for (;;) {
        const last = seen.at(-1);
        const page = await readPastCursor(
          { where: {}, createdAt: { lt: before }, order: 'asc', after: last, take },
          findMany,
        );
        seen.push(...page);
        if (page.length < take) break;
      }
      expect(
        seen.map((row) => row.id),
        `take ${take}`,
      ).toEqual(expected);
    }
  });

  it('reads a page that ends a tie and begins the next time as two reads, each from the cursor on', async () => {
    const { findMany, reads } = table();
    const newest = rows.slice().sort(compare('desc'));
    // The cursor: the fifth-last row of the newest time.
    const tie = newest.filter((row) => row.createdAt.getTime() === newest[0]!.createdAt.getTime());
    const after = tie.at(-5)!;
    const page = await readPastCursor({ where: {}, order: 'desc', after, take: 10 }, findMany);
    expect(page.map((row) => row.id)).toEqual(newest.slice(tie.length - 4, tie.length + 6).map((row) => row.id));
    expect(reads.map((read) => read.where)).toEqual([
      { createdAt: { equals: after.createdAt }, id: { lt: after.id } },
      { createdAt: { lt: after.createdAt } },
    ]);
  });
});
