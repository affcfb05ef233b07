// The audit of ops writes (contract-decisions section 12: every action records the key's name):
// one row per write request to the ops API and the console, and per console sign-in, whatever it
// answered (a refusal too), with the ops key's or the person's name when one is known (and, from
// the ops API, the X-Ops-Actor note). The only writer of
// ops_action. Rows are written behind the answers, a few at a time, and a write that fails is
// tried again (with a growing wait) until it lands: an audit row is never only logged. What waits
// is bounded; past it the oldest rows are dropped, counted and logged, never the process's memory.
// It also offers the audit's one read, a page of acts for the console (listOpsActions).
import { Prisma } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';

export interface OpsActionEntry {
  /** The key's name; null when no valid key was presented (a 401). */
  keyName: string | null;
  /** The X-Ops-Actor note, when the caller gave a well-formed one. */
  actor: string | null;
  method: string;
  path: string;
  status: number;
  requestId: string | null;
  /** When the request was answered (rows written later keep the moment of the act). */
  at?: Date;
  /** Where: the ops API (default) or the console. */
  channel?: 'api' | 'console';
}

export interface OpsActionLog {
  /** Queues the row; it is written shortly, and again until it lands. */
  record(entry: OpsActionEntry): void;
  /** Waits until every row recorded so far is written, or `timeoutMs` passed; true when all are. */
  drain(timeoutMs?: number): Promise<boolean>;
  /** Rows waiting to be written, and rows dropped because too many waited (tests, metrics). */
  state(): { waiting: number; dropped: number };
}

export interface OpsActionLogOptions {
  /** Rows per INSERT; default 500. */
  batchSize?: number;
  /** Rows that may wait; past it the oldest go. Default 100,000 (about 30 MB). */
  maxWaiting?: number;
  /** Waits after failed writes, the last one repeated; default 250 ms doubling to 10 s. */
  retryDelaysMs?: readonly number[];
}

const DEFAULT_RETRY_DELAYS_MS = [250, 500, 1000, 2000, 5000, 10_000];

const rowOf = (entry: OpsActionEntry) => ({
  keyName: entry.keyName?.slice(0, 128) ?? null,
  actor: entry.actor?.slice(0, 100) ?? null,
  method: entry.method.slice(0, 8),
  path: entry.path.slice(0, 512),
  status: entry.status,
  requestId: entry.requestId?.slice(0, 64) ?? null,
  at: entry.at ?? new Date(),
  channel: entry.channel ?? 'api',
});

export function createOpsActionLog(database: Database, logger: Logger, options: OpsActionLogOptions = {}): OpsActionLog {
  const batchSize = options.batchSize ?? 500;
  const maxWaiting = options.maxWaiting ?? 100_000;
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const waiting: Array<ReturnType<typeof rowOf>> = [];
  let dropped = 0;
  let writing: Promise<void> | null = null;
  const drained: Array<() => void> = [];

  async function writeAll(): Promise<void> {
    let failures = 0;
    while (waiting.length > 0) {
      const rows = waiting.slice(0, batchSize);
      try {
        await database.opsAction.createMany({ data: rows });
        // Only what was written leaves the line (rows dropped meanwhile shifted it: drop by identity).
        const written = new Set(rows);
        let kept = 0;
        for (const row of waiting) if (!written.has(row)) waiting[kept++] = row;
        waiting.length = kept;
        failures = 0;
      } catch (error) {
        const delay = delays[Math.min(failures, delays.length - 1)]!;
        failures += 1;
        logger.error({ err: (error as Error).message, waiting: waiting.length, retryInMs: delay }, 'could not write ops audit rows: trying again');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
    for (const resolve of drained.splice(0)) resolve();
  }

  function startWriting(): void {
    if (writing) return;
    writing = writeAll().finally(() => {
      writing = null;
      if (waiting.length > 0) startWriting();
    });
  }

  return {
    record(entry) {
      waiting.push(rowOf(entry));
      if (waiting.length > maxWaiting) {
        const over = waiting.length - maxWaiting;
        waiting.splice(0, over);
        dropped += over;
        logger.error({ dropped: over, waiting: waiting.length }, 'ops audit rows dropped: too many waited to be written');
      }
      startWriting();
    },
    async drain(timeoutMs = 10_000) {
      if (waiting.length === 0) return true;
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([
        new Promise<boolean>((resolve) => drained.push(() => resolve(true))),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      return done;
    },
    state: () => ({ waiting: waiting.length, dropped }),
  };
}

// ---- reading the audit (the console's audit page) ------------------------------------------

/**
 * Kinds of act, named for people: each is a method and path shape of the ops API or the console
 * (both channels), matched against `METHOD /path`.
 */
export const opsActionKinds = {
  'sign-in': { label: 'Console sign-in and sign-out', pattern: '^(POST /console/sign-(in|out)|GET /console/oidc/callback)$' },
  'funding.create': { label: 'Funding requested', pattern: '^POST /ops/fundings$' },
  'funding.cancel': { label: 'Funding cancelled', pattern: '^POST /(ops|console)/fundings/[^/]+/cancel$' },
  'funding.resolve': { label: 'Funding resolved', pattern: '^POST /(ops|console)/fundings/[^/]+/resolve$' },
  'payment.create': { label: 'Payment requested', pattern: '^POST /ops/payments$' },
  'payment.resolve': { label: 'Payment resolved', pattern: '^POST /(ops|console)/payments/[^/]+/resolve$' },
  adjustment: { label: 'Account adjusted', pattern: '^POST /(ops|console)/accounts/[^/]+/adjustments$' },
  unlink: { label: 'Link revoked (unlinked)', pattern: '^(DELETE /ops/links/[^/]+|POST /console/links/[^/]+/unlink)$' },
  'login-url': { label: 'Login URL minted', pattern: '^POST /ops/links/login-urls$' },
  'webhook.endpoint': { label: 'Webhook endpoint added or deleted', pattern: '^(POST /ops/webhooks/endpoints|DELETE /ops/webhooks/endpoints/[^/]+)$' },
  'webhook.redeliver': { label: 'Webhook redelivered', pattern: '^POST /(ops|console)/webhooks/deliveries/[^/]+/redeliver$' },
  batch: { label: 'Funding batch act', pattern: '^POST /(ops/funding-batches|console/batches)(/.*)?$' },
} as const satisfies Record<string, { label: string; pattern: string }>;

export type OpsActionKind = keyof typeof opsActionKinds;
export const isOpsActionKind = (value: string): value is OpsActionKind => Object.hasOwn(opsActionKinds, value);

/** One audited act as the audit page shows it. */
export interface OpsActionRow {
  id: string;
  at: Date;
  keyName: string | null;
  channel: string;
  actor: string | null;
  method: string;
  path: string;
  status: number;
  requestId: string | null;
}

export interface OpsActionQuery {
  /** A key's name or a person's recorded name, whole (any case), or a person's display name or identity (`oidc:…`). */
  person?: string | undefined;
  /** A kind of act, or `METHOD /path-prefix` (or a path prefix alone). */
  action?: { kind: OpsActionKind } | { method?: string | undefined; pathPrefix: string } | undefined;
  /** A day as local timestamps of `timeZone` (a SettlementDay): from its midnight to the next. */
  day?: { start: string; end: string; timeZone: string } | undefined;
  /** The nextCursor of the previous page. */
  cursor?: string | undefined;
  limit: number;
}

export type OpsActionPage =
  | {
      kind: 'page';
      items: OpsActionRow[];
      nextCursor: string | null;
      /** True when the page is short because the filters matched nothing more in the acts it looked through (there may be more further back: nextCursor goes on from there). */
      searchedAll: boolean;
    }
  | { kind: 'invalid-cursor' };

/**
 * How many acts one page looks through at most, newest first from its cursor (within the day
 * when one is given). The filters on a person or an action are tested on these rows only, so a
 * page costs a bounded range of the (at, id) index whatever the filters and however long the
 * history; a filter that matches rarely gives a short page and a cursor to look further back.
 */
export const OPS_ACTIONS_SCANNED_PER_PAGE = 5000;

export function encodeOpsActionCursor(at: Date, id: string): string {
  return Buffer.from(`${at.toISOString()}|${id}`).toString('base64url');
}

export function decodeOpsActionCursor(cursor: string): { at: Date; id: bigint } | null {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([1-9]\d{0,18})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) return null;
  const at = new Date(match[1]!);
  return Number.isNaN(at.getTime()) ? null : { at, id: BigInt(match[2]!) };
}

/** `value` as a LIKE pattern's literal part: its %, _ and \ stand for themselves. */
const likeLiteral = (value: string) => value.replace(/[\\%_]/g, (char) => `\\${char}`);

/**
 * A page of the audit, newest first: ops API and console acts alike. Looks through at most
 * OPS_ACTIONS_SCANNED_PER_PAGE rows from the cursor (a bounded range of the (at, id) index, or of
 * one day's part of it) and keeps those the filters match.
 */
export async function listOpsActions(database: Database, query: OpsActionQuery): Promise<OpsActionPage> {
  const after = query.cursor ? decodeOpsActionCursor(query.cursor) : null;
  if (query.cursor && !after) return { kind: 'invalid-cursor' };
  const range: Prisma.Sql[] = [];
  // The cursor's time is a plain bound (the index scan starts there, or at the day's end if that
  // comes first); the tie on it is broken by id as a filter. A row comparison (at, id) < (…) would
  // be taken as the scan's start and make a day's end only a filter.
  if (after) range.push(Prisma.sql`at <= ${after.at}::timestamptz AND (at < ${after.at}::timestamptz OR id < ${after.id}::bigint)`);
  if (query.day) {
    const { start, end, timeZone } = query.day;
    range.push(Prisma.sql`at >= (${start}::timestamp AT TIME ZONE ${timeZone}) AND at < (${end}::timestamp AT TIME ZONE ${timeZone})`);
  }
  const filters: Prisma.Sql[] = [];
  if (query.person) {
    const person = query.person;
    // The recorded name whole (key names compare without case), a person's display name (what comes
    // before their identity in parentheses), or their identity alone.
    filters.push(Prisma.sql`(lower(key_name) = lower(${person}) OR key_name LIKE ${`${likeLiteral(person)} (%`} OR key_name LIKE ${`%(${likeLiteral(person)})`})`);
  }
  const action = query.action;
  if (action && 'kind' in action) filters.push(Prisma.sql`(method || ' ' || path) ~ ${opsActionKinds[action.kind].pattern}`);
  else if (action) {
    if (action.method) filters.push(Prisma.sql`method = ${action.method}`);
    if (action.pathPrefix) filters.push(Prisma.sql`path LIKE ${`${likeLiteral(action.pathPrefix)}%`}`);
  }
  const where = range.length > 0 ? Prisma.sql`WHERE ${Prisma.join(range, ' AND ')}` : Prisma.empty;
  const matching = filters.length > 0 ? Prisma.sql`WHERE ${Prisma.join(filters, ' AND ')}` : Prisma.empty;
  const rows = await database.$queryRaw<Array<{ id: bigint; at: Date; key_name: string | null; channel: string; actor: string | null; method: string; path: string; status: number; request_id: string | null; edge: boolean }>>`
    WITH scanned AS MATERIALIZED (
      SELECT id, at, key_name, channel, actor, method, path, status, request_id, row_number() OVER (ORDER BY at DESC, id DESC) AS n
      FROM (SELECT * FROM ops_action ${where} ORDER BY at DESC, id DESC LIMIT ${OPS_ACTIONS_SCANNED_PER_PAGE}) newest)
    (SELECT id, at, key_name, channel, actor, method, path, status, request_id, false AS edge FROM scanned ${matching} ORDER BY at DESC, id DESC LIMIT ${query.limit + 1})
    UNION ALL
    (SELECT id, at, key_name, channel, actor, method, path, status, request_id, true AS edge FROM scanned WHERE n = ${OPS_ACTIONS_SCANNED_PER_PAGE})`;
  const matches = rows.filter((row) => !row.edge);
  const edge = rows.find((row) => row.edge);
  const items = matches.slice(0, query.limit).map((row) => ({
    id: row.id.toString(),
    at: row.at,
    keyName: row.key_name,
    channel: row.channel,
    actor: row.actor,
    method: row.method,
    path: row.path,
    status: row.status,
    requestId: row.request_id,
  }));
  const last = items.at(-1);
  // A full page goes on after its last row; a short one after the last row it looked through, when it looked through all it may.
  if (matches.length > query.limit && last) return { kind: 'page', items, nextCursor: encodeOpsActionCursor(last.at, last.id), searchedAll: false };
  return { kind: 'page', items, nextCursor: edge ? encodeOpsActionCursor(edge.at, edge.id.toString()) : null, searchedAll: edge !== undefined };
}
