// The audit of ops writes (contract-decisions section 12: every action records the key's name):
// one row per write request to the ops API and the console, and per console sign-in, whatever it
// answered (a refusal too), with the ops key's or the person's name when one is known (and, from
// the ops API, the X-Ops-Actor note), and the client's address. The only writer of ops_action and
// ops_action_budget. Rows are written behind the answers, a few at a time, and a write that fails
// is tried again (with a growing wait) until it lands: an audit row is never only logged. What
// waits is bounded; past it the oldest rows are dropped, counted and logged, never the process's
// memory.
//
// A request without a session or a key (no name: anyone on the internet can send one) is recorded
// within a budget, so that the audit stays useful and its growth bounded whatever is sent: per
// channel (ops API, console), client address (IPv6 by its /64) and minute of the database's clock,
// ANONYMOUS_AUDIT_PER_CLIENT_PER_MINUTE rows one by one; past it one summary row for that client,
// channel and minute whose `count` says how many more came (it grows until the minute is over);
// and past ANONYMOUS_AUDIT_PER_MINUTE rows of a channel in a minute, whatever the clients, one
// summary row of every client (`*`). The budget is counted in PostgreSQL (ops_action_budget), its
// writes serialized by an advisory lock, so every API process writes within one budget. Rows with
// a name are never budgeted. The table is never purged (docs/security.md says why).
//
// It also offers the audit's one read, a page of acts for the console (listOpsActions).
import { Prisma } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { decodeTimeIdCursor, encodeTimeIdCursor } from '../lib/page-cursor.ts';

/**
 * Requests without a session or key recorded one by one per client address, channel and minute; past it, one summary
 * row.
 */
export const ANONYMOUS_AUDIT_PER_CLIENT_PER_MINUTE = 20;
/**
 * Rows for requests without a session or key per channel and minute, whatever the clients (summaries included); past
 * it, one summary row of every client.
 */
export const ANONYMOUS_AUDIT_PER_MINUTE = 300;
/**
 * Clients this process tells apart before its budget's bookkeeping; past it, the rest of the minute counts as every
 * client's (`*`).
 */
const MAX_CLIENTS_REMEMBERED = 10_000;
/** The client of a summary of every client. */
const EVERY_CLIENT = '*';

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
  /**
   * The client's address as limits count it (api/http/rate-limit.ts rateKeyOf); a request without a name is budgeted by
   * it.
   */
  client?: string | null;
}

export interface OpsActionLog {
  /**
   * Queues the row (within the budget, for a request without a name); it is written shortly, and again until it lands.
   */
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
  /** The budget for requests without a name (tests); defaults: the constants above. */
  anonymousPerClientPerMinute?: number;
  anonymousPerMinute?: number;
}

const DEFAULT_RETRY_DELAYS_MS = [250, 500, 1000, 2000, 5000, 10_000];

type Row = ReturnType<typeof rowOf>;

/** The room of an act's note (`ops_action.actor`, VARCHAR(100)). */
const NOTE_LENGTH = 100;
/** The words of the note of a console write refused for a session that had ended, before whose it was. */
const ENDED_SESSION_WORDS = 'session ended: ';
/** The room for whose ended session it was, after those words. */
export const ENDED_SESSION_ROOM = NOTE_LENGTH - ENDED_SESSION_WORDS.length;
/** The note of a console write refused for a session that had ended: whose session it was. */
export const endedSessionNote = (whose: string): string => `${ENDED_SESSION_WORDS}${whose}`;

const rowOf = (entry: OpsActionEntry) => ({
  keyName: entry.keyName?.slice(0, 128) ?? null,
  actor: entry.actor?.slice(0, NOTE_LENGTH) ?? null,
  method: entry.method.slice(0, 8),
  path: entry.path.slice(0, 512),
  status: entry.status,
  requestId: entry.requestId?.slice(0, 64) ?? null,
  at: entry.at ?? new Date(),
  channel: entry.channel ?? 'api',
  client: entry.client?.slice(0, 64) ?? null,
});

/** A summary's row: what it says of the requests it stands for. */
const summaryPath = (channel: string, client: string) =>
  `${channel === 'console' ? '/console' : '/ops'} (requests without a session or key${client === EVERY_CLIENT ? ', from any address,' : ''} past the audit's budget: counted, not recorded one by one)`;

/** Requests past this process's own share of the budget: counted per channel and client, never queued one by one. */
type PastCounts = Map<string, { channel: string; client: string; count: number }>;

export function createOpsActionLog(
  database: Database,
  logger: Logger,
  options: OpsActionLogOptions = {},
): OpsActionLog {
  const batchSize = options.batchSize ?? 500;
  const maxWaiting = options.maxWaiting ?? 100_000;
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const perClient = options.anonymousPerClientPerMinute ?? ANONYMOUS_AUDIT_PER_CLIENT_PER_MINUTE;
  const perChannel = options.anonymousPerMinute ?? ANONYMOUS_AUDIT_PER_MINUTE;
  const waiting: Row[] = [];
  let dropped = 0;
  let writing: Promise<void> | null = null;
  const drained: Array<() => void> = [];
  // This process's own view of the minute (its memory's bound, not the budget: the database keeps
  // that): past the budget a client's requests are only counted here, whatever is sent.
  let minute = -1;
  let queuedThisMinute = new Map<string, number>();
  let past: PastCounts = new Map();

  const countPast = (channel: string, client: string, count = 1) => {
    const key = `${channel} ${client}`;
    const entry = past.get(key) ?? { channel, client, count: 0 };
    entry.count += count;
    past.set(key, entry);
  };

  /** Whether a request without a name is queued one by one (else only counted). */
  function admitAnonymous(channel: string, client: string): boolean {
    const now = Math.floor(Date.now() / 60_000);
    if (now !== minute) {
      minute = now;
      queuedThisMinute = new Map();
    }
    const channelKey = `${channel} ${EVERY_CLIENT}`;
    const clientKey = `${channel} ${client}`;
    const ofClient = queuedThisMinute.get(clientKey);
    if (
      (queuedThisMinute.get(channelKey) ?? 0) >= perChannel ||
      (ofClient === undefined && queuedThisMinute.size >= MAX_CLIENTS_REMEMBERED)
    ) {
      countPast(channel, EVERY_CLIENT);
      return false;
    }
    if ((ofClient ?? 0) >= perClient) {
      countPast(channel, client);
      return false;
    }
    queuedThisMinute.set(clientKey, (ofClient ?? 0) + 1);
    queuedThisMinute.set(channelKey, (queuedThisMinute.get(channelKey) ?? 0) + 1);
    return true;
  }

  /**
   * Writes named rows as they are, and rows without a name within the budget, in one transaction:
   * the budget's counts are read and written under an advisory lock, so processes writing at once
   * stay within one budget; a summary's count grows in place (`summary_of` is unique).
   */
  async function writeBatch(
    rows: readonly Row[],
    pastCounts: readonly { channel: string; client: string; count: number }[],
  ): Promise<void> {
    const named = rows.filter((row) => row.keyName !== null);
    const anonymous = rows.filter((row) => row.keyName === null);
    if (anonymous.length === 0 && pastCounts.length === 0) {
      await database.opsAction.createMany({ data: [...named] });
      return;
    }
    await database.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('ops_action_budget'))`;
      const [clock] = await tx.$queryRaw<
        Array<{ window_start: Date }>
      >`SELECT date_trunc('minute', now()) AS window_start`;
      const windowStart = clock!.window_start;
      const channels = [
        ...new Set([...anonymous.map((row) => row.channel), ...pastCounts.map((count) => count.channel)]),
      ];
      const clients = [
        ...new Set([
          ...anonymous.map((row) => row.client ?? 'unknown'),
          ...pastCounts.map((count) => count.client),
          EVERY_CLIENT,
        ]),
      ];
      const budgets = await tx.opsActionBudget.findMany({
        where: { windowStart, channel: { in: channels }, client: { in: clients } },
      });
      const recorded = new Map(budgets.map((budget) => [`${budget.channel} ${budget.client}`, budget.recorded]));
      const summaries = new Set(
        (
          await tx.opsAction.findMany({
            where: {
              summaryOf: {
                in: clients.flatMap((client) => channels.map((channel) => summaryKey(channel, client, windowStart))),
              },
            },
            select: { summaryOf: true },
          })
        ).map((row) => row.summaryOf),
      );
      const kept: Row[] = [...named];
      const summed = new Map<string, { channel: string; client: string; count: number }>();
      const addToSummary = (channel: string, client: string, count: number) => {
        const key = summaryKey(channel, client, windowStart);
        // A client's first summary of the minute is a row: within the channel's budget, else every client's summary
        // takes it.
        if (client !== EVERY_CLIENT && !summaries.has(key) && !summed.has(key)) {
          const ofChannel = recorded.get(`${channel} ${EVERY_CLIENT}`) ?? 0;
          if (ofChannel >= perChannel) {
            addToSummary(channel, EVERY_CLIENT, count);
            return;
          }
          recorded.set(`${channel} ${EVERY_CLIENT}`, ofChannel + 1);
        }
        const entry = summed.get(key) ?? { channel, client, count: 0 };
        entry.count += count;
        summed.set(key, entry);
      };
      for (const row of anonymous) {
        const client = row.client ?? 'unknown';
        const ofClient = recorded.get(`${row.channel} ${client}`) ?? 0;
        const ofChannel = recorded.get(`${row.channel} ${EVERY_CLIENT}`) ?? 0;
        if (ofChannel >= perChannel) addToSummary(row.channel, EVERY_CLIENT, 1);
        else if (ofClient >= perClient) addToSummary(row.channel, client, 1);
        else {
          kept.push(row);
          recorded.set(`${row.channel} ${client}`, ofClient + 1);
          recorded.set(`${row.channel} ${EVERY_CLIENT}`, ofChannel + 1);
        }
      }
      for (const count of pastCounts) addToSummary(count.channel, count.client, count.count);
      if (kept.length > 0) await tx.opsAction.createMany({ data: kept });
      for (const [key, summary] of summed) {
        await tx.$executeRaw`
          INSERT INTO ops_action (at, key_name, channel, actor, method, path, status, request_id, client, count, summary_of)
          VALUES (${windowStart}, NULL, ${summary.channel}, NULL, '*', ${summaryPath(summary.channel, summary.client)}, 0, NULL, ${summary.client}, ${summary.count}, ${key})
          ON CONFLICT (summary_of) DO UPDATE SET count = ops_action.count + EXCLUDED.count`;
      }
      for (const [key, value] of recorded) {
        const [channel = '', client = ''] = key.split(' ');
        await tx.$executeRaw`
          INSERT INTO ops_action_budget (channel, client, window_start, recorded) VALUES (${channel}, ${client}, ${windowStart}, ${value})
          ON CONFLICT (channel, client, window_start) DO UPDATE SET recorded = EXCLUDED.recorded`;
      }
    });
  }

  async function writeAll(): Promise<void> {
    let failures = 0;
    while (waiting.length > 0 || past.size > 0) {
      const rows = waiting.slice(0, batchSize);
      const pastCounts = [...past.values()].map((count) => ({ ...count }));
      past = new Map();
      try {
        await writeBatch(rows, pastCounts);
        // Only what was written leaves the line (rows dropped meanwhile shifted it: drop by identity).
        const written = new Set(rows);
        let kept = 0;
        for (const row of waiting) if (!written.has(row)) waiting[kept++] = row;
        waiting.length = kept;
        failures = 0;
      } catch (error) {
        // The counts go back, to be written with the next try.
        for (const count of pastCounts) countPast(count.channel, count.client, count.count);
        const delay = delays[Math.min(failures, delays.length - 1)]!;
        failures += 1;
        logger.error(
          { err: (error as Error).message, waiting: waiting.length, retryInMs: delay },
          'could not write ops audit rows: trying again',
        );
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
    for (const resolve of drained.splice(0)) resolve();
  }

  function startWriting(): void {
    if (writing) return;
    writing = writeAll().finally(() => {
      writing = null;
      if (waiting.length > 0 || past.size > 0) startWriting();
    });
  }

  return {
    record(entry) {
      const row = rowOf(entry);
      if (row.keyName === null && !admitAnonymous(row.channel, row.client ?? 'unknown')) {
        startWriting();
        return;
      }
      waiting.push(row);
      if (waiting.length > maxWaiting) {
        const over = waiting.length - maxWaiting;
        waiting.splice(0, over);
        dropped += over;
        logger.error(
          { dropped: over, waiting: waiting.length },
          'ops audit rows dropped: too many waited to be written',
        );
      }
      startWriting();
    },
    async drain(timeoutMs = 10_000) {
      if (waiting.length === 0 && past.size === 0 && !writing) return true;
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

/** A summary's key: one row per channel, client and minute. */
const summaryKey = (channel: string, client: string, windowStart: Date) =>
  `${channel} ${client} ${windowStart.toISOString()}`;

/**
 * Deletes up to `batchSize` budget counts whose minute is over (the summary rows keep what they counted); answers how
 * many.
 */
export async function purgeSpentAuditBudgets(database: Database, batchSize: number): Promise<number> {
  return database.$executeRaw`DELETE FROM ops_action_budget WHERE (channel, client, window_start) IN (
    SELECT channel, client, window_start FROM ops_action_budget WHERE window_start < date_trunc('minute', now()) ORDER BY window_start LIMIT ${batchSize})`;
}

// ---- reading the audit (the console's audit page) ------------------------------------------

/**
 * Kinds of act, named for people: each is a method and path shape of the ops API or the console
 * (both channels), matched against `METHOD /path`.
 */
export const opsActionKinds = {
  'sign-in': {
    label: 'Console sign-in and sign-out',
    pattern: '^(POST /console/sign-(in|out)|GET /console/oidc/callback)$',
  },
  'funding.create': { label: 'Funding requested', pattern: '^POST /ops/fundings$' },
  'funding.cancel': { label: 'Funding cancelled', pattern: '^POST /(ops|console)/fundings/[^/]+/cancel$' },
  'funding.resolve': { label: 'Funding resolved', pattern: '^POST /(ops|console)/fundings/[^/]+/resolve$' },
  'payment.create': { label: 'Payment requested', pattern: '^POST /ops/payments$' },
  'payment.resolve': { label: 'Payment resolved', pattern: '^POST /(ops|console)/payments/[^/]+/resolve$' },
  adjustment: { label: 'Account adjusted', pattern: '^POST /(ops|console)/accounts/[^/]+/adjustments$' },
  unlink: { label: 'Link revoked (unlinked)', pattern: '^(DELETE /ops/links/[^/]+|POST /console/links/[^/]+/unlink)$' },
  'login-url': { label: 'Login URL minted', pattern: '^POST /ops/links/login-urls$' },
  'webhook.endpoint': {
    label: 'Webhook endpoint added or deleted',
    pattern: '^(POST /ops/webhooks/endpoints|DELETE /ops/webhooks/endpoints/[^/]+)$',
  },
  'webhook.redeliver': {
    label: 'Webhook redelivered',
    pattern: '^POST /(ops|console)/webhooks/deliveries/[^/]+/redeliver$',
  },
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
  /** The client's address as limits count it, when kept. */
  client: string | null;
  /** How many requests the row stands for (a summary's count). */
  count: number;
  /** Whether it is a summary of requests without a session or key past the budget. */
  summary: boolean;
}

export interface OpsActionQuery {
  /**
   * A key's name (any case) or a person's recorded name, whole, or a person's display name or identity
   * (`oidc:…`, in its provider's case).
   */
  person?: string | undefined;
  /** A kind of act, or `METHOD /path-prefix` (or a path prefix alone). */
  action?: { kind: OpsActionKind } | { method?: string | undefined; pathPrefix: string } | undefined;
  /** A day of SETTLEMENT_TZ: its first instant and the first of a later day (ledger/settlement.ts SettlementDay). */
  day?: { startsAt: Date; endsAt: Date } | undefined;
  /** The nextCursor of the previous page. */
  cursor?: string | undefined;
  limit: number;
}

export type OpsActionPage =
  | {
      kind: 'page';
      items: OpsActionRow[];
      nextCursor: string | null;
      /**
       * True when the page is short because the filters matched nothing more in the acts it looked through (there may
       * be more further back: nextCursor goes on from there).
       */
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

/** `value` as a LIKE pattern's literal part: its %, _ and \ stand for themselves. */
const likeLiteral = (value: string) => value.replace(/[\\%_]/g, (char) => `\\${char}`);

/**
 * A page of the audit, newest first: ops API and console acts alike. Looks through at most
 * OPS_ACTIONS_SCANNED_PER_PAGE rows from the cursor (a bounded range of the (at, id) index, or of
 * one day's part of it) and keeps those the filters match.
 */
export async function listOpsActions(database: Database, query: OpsActionQuery): Promise<OpsActionPage> {
  const after = query.cursor ? decodeTimeIdCursor(query.cursor) : null;
  if (query.cursor && !after) return { kind: 'invalid-cursor' };
  const range: Prisma.Sql[] = [];
  // The cursor's time is a plain bound (the index scan starts there, or at the day's end if that
  // comes first); the tie on it is broken by id as a filter. A row comparison (at, id) < (…) would
  // be taken as the scan's start and make a day's end only a filter.
  if (after)
    range.push(
      Prisma.sql`at <= ${after.at}::timestamptz AND (at < ${after.at}::timestamptz OR id < ${after.id}::bigint)`,
    );
  if (query.day) {
    const { startsAt, endsAt } = query.day;
    range.push(Prisma.sql`at >= ${startsAt.toISOString()}::timestamptz AND at < ${endsAt.toISOString()}::timestamptz`);
  }
  const filters: Prisma.Sql[] = [];
  if (query.person) {
    const person = query.person;
    // The recorded name whole, a person's display name (what comes before their identity in
    // parentheses), or their identity alone. A key's name (never a parenthesis: lib/ops-keys.ts)
    // compares without case; a person's identity as their provider gives it (domain/actor.ts).
    // A console write refused for a session that had ended carries whose it was in its note (console-router.ts): the
    // name as recorded, or the identity alone where that would not fit, as much of it as the note holds; compared
    // without case for a key's name only (an identity is the provider's, case and all). Without case in the C
    // collation, A-Z alone as a key's name has them: a Turkish locale's lower() makes I a dotless ı.
    const ended = endedSessionNote(person);
    filters.push(
      Prisma.sql`(key_name = ${person} OR (key_name NOT LIKE '%)' AND lower(key_name COLLATE "C") = lower(${person}::text COLLATE "C")) OR key_name LIKE ${`${likeLiteral(person)} (%`} OR key_name LIKE ${`%(${likeLiteral(person)})`}
        OR (key_name IS NULL AND channel = 'console' AND (actor = left(${ended}, ${NOTE_LENGTH}) OR (actor NOT LIKE '%)' AND actor NOT LIKE ${`${ENDED_SESSION_WORDS}oidc:%`} AND lower(actor COLLATE "C") = lower(${ended}::text COLLATE "C")) OR actor LIKE ${`${likeLiteral(ended)} (%`} OR actor LIKE ${`${ENDED_SESSION_WORDS}%(${likeLiteral(person)})`} OR actor = left(${ENDED_SESSION_WORDS} || substring(${person} from '\\(([^()]*)\\)$'), ${NOTE_LENGTH}))))`,
    );
  }
  const action = query.action;
  if (action && 'kind' in action)
    filters.push(Prisma.sql`(method || ' ' || path) ~ ${opsActionKinds[action.kind].pattern}`);
  else if (action) {
    if (action.method) filters.push(Prisma.sql`method = ${action.method}`);
    if (action.pathPrefix) filters.push(Prisma.sql`path LIKE ${`${likeLiteral(action.pathPrefix)}%`}`);
  }
  const where = range.length > 0 ? Prisma.sql`WHERE ${Prisma.join(range, ' AND ')}` : Prisma.empty;
  const matching = filters.length > 0 ? Prisma.sql`WHERE ${Prisma.join(filters, ' AND ')}` : Prisma.empty;
  const rows = await database.$queryRaw<
    Array<{
      id: bigint;
      at: Date;
      key_name: string | null;
      channel: string;
      actor: string | null;
      method: string;
      path: string;
      status: number;
      request_id: string | null;
      client: string | null;
      count: number;
      summary: boolean;
      edge: boolean;
    }>
  >`
    WITH scanned AS MATERIALIZED (
      SELECT id, at, key_name, channel, actor, method, path, status, request_id, client, count, summary_of IS NOT NULL AS summary, row_number() OVER (ORDER BY at DESC, id DESC) AS n
      FROM (SELECT * FROM ops_action ${where} ORDER BY at DESC, id DESC LIMIT ${OPS_ACTIONS_SCANNED_PER_PAGE}) newest)
    (SELECT id, at, key_name, channel, actor, method, path, status, request_id, client, count, summary, false AS edge FROM scanned ${matching} ORDER BY at DESC, id DESC LIMIT ${query.limit + 1})
    UNION ALL
    (SELECT id, at, key_name, channel, actor, method, path, status, request_id, client, count, summary, true AS edge FROM scanned WHERE n = ${OPS_ACTIONS_SCANNED_PER_PAGE})`;
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
    client: row.client,
    count: row.count,
    summary: row.summary,
  }));
  const last = items.at(-1);
  // A full page goes on after its last row; a short one after the last row it looked through, when it looked through
  // all it may.
  if (matches.length > query.limit && last)
    return { kind: 'page', items, nextCursor: encodeTimeIdCursor(last.at, last.id), searchedAll: false };
  return {
    kind: 'page',
    items,
    nextCursor: edge ? encodeTimeIdCursor(edge.at, edge.id.toString()) : null,
    searchedAll: edge !== undefined,
  };
}
