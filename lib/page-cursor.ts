// Cursor pagination for lists ordered newest first (the last item's createdAt and id, opaque to
// clients) and their date filters: a forged cursor or far-off date never reaches PostgreSQL.
import { z } from 'zod';

/** What encodeCursor writes: toISOString() of a row's createdAt (no row predates 1970). */
const createdAtPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Year 10000, where ISO-8601 with four-digit years ends. */
const END_OF_YEAR_9999_MS = 253_402_300_800_000;

/** A `from`/`to` filter: ISO-8601 with an offset, between 1970 and 9999 (PostgreSQL has no year 0). */
export const listDateSchema = (name: string) =>
  z.iso.datetime({ offset: true, error: `${name} must be an ISO-8601 date-time` }).refine((value) => {
    const at = Date.parse(value);
    return at >= 0 && at < END_OF_YEAR_9999_MS;
  }, `${name} must lie between 1970 and 9999`);

export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | null {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(decoded) || decoded.length !== 2) return null;
    const [at, id] = decoded as unknown[];
    if (typeof at !== 'string' || !createdAtPattern.test(at) || typeof id !== 'string') return null;
    const createdAt = new Date(at);
    if (Number.isNaN(createdAt.getTime()) || createdAt.getTime() < 0 || !z.uuid().safeParse(id).success) return null;
    return { createdAt, id };
  } catch {
    return null;
  }
}

/** PostgreSQL's largest bigint: a row id a cursor may name. */
export const MAX_BIGINT = 9_223_372_036_854_775_807n;

/**
 * A cursor of rows ordered newest first by a time and a bigint id (the audit's acts, a link's events):
 * `<ISO time>|<id>`, opaque to clients.
 */
export function encodeTimeIdCursor(at: Date, id: string | bigint): string {
  return Buffer.from(`${at.toISOString()}|${id}`).toString('base64url');
}

/**
 * A cursor encodeTimeIdCursor wrote, or null: a forged time before 1970 or an id past a bigint never reaches
 * PostgreSQL.
 */
export function decodeTimeIdCursor(cursor: string): { at: Date; id: bigint } | null {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([1-9]\d{0,18})$/.exec(
    Buffer.from(cursor, 'base64url').toString('utf8'),
  );
  if (!match) return null;
  const at = new Date(match[1]!);
  const id = BigInt(match[2]!);
  return Number.isNaN(at.getTime()) || at.getTime() < 0 || id > MAX_BIGINT ? null : { at, id };
}

/** A page of a list: its items, newest first, and the cursor of the next page (null on the last). */
export const pageSchema = <Item extends z.ZodType>(item: Item) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });
