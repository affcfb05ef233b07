// The settlement runs and their lines (docs/ledger.md, settlement): the only writer of
// settlement_run and settlement_line. A run is started once per day at a time (a partial unique
// index refuses a second RUNNING one, so a burst of requests starts one), counts what it will
// check, stores each page of lines with its progress in one transaction (a line already stored is
// not stored or counted again: a resumed run skips it), and ends with the day's counts. Read back
// a page at a time in (kind, item id) order, or line by line for the CSV.
import { randomUUID } from 'node:crypto';
import { Prisma } from '../generated/prisma/client.ts';
import {
  settlementSummarySchema,
  type SettlementCounts,
  type SettlementItem,
  type SettlementSummary,
} from '../domain/ledger.ts';
import { amountOf, fromNumeric, thousandthsIn, toNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';

export type SettlementRunState = 'RUNNING' | 'SUCCEEDED' | 'FAILED';
export type SettlementLineKind = SettlementItem['kind'];

export interface SettlementRun {
  id: string;
  date: string;
  number: number;
  timeZone: string;
  state: SettlementRunState;
  /** The day had ended when the run began (false: today's report so far). */
  wholeDay: boolean;
  /**
   * A report of the day so far reads the events stamped before this instant (its begin's database time); null for
   * the whole day, or a run begun before it was kept (then: up to the day's end).
   */
  readUntil: Date | null;
  requestedBy: string;
  total: number;
  checked: number;
  /** The day's counts, once the run SUCCEEDED. */
  summary: SettlementSummary | null;
  failure: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** Where a page of a run's lines ends: the next page starts after this line. */
export interface LineCursor {
  kind: SettlementLineKind;
  itemId: string;
}

/** A write to a run that is no longer RUNNING (it finished, or was given up): nothing was stored. */
export class SettlementRunNotRunning extends Error {
  readonly code = 'SETTLEMENT_RUN_NOT_RUNNING';
  constructor(readonly runId: string) {
    super(`settlement run ${runId} is not running`);
    this.name = 'SettlementRunNotRunning';
  }
}

interface RunRow {
  id: string;
  date: string;
  number: number;
  time_zone: string;
  state: SettlementRunState;
  whole_day: boolean;
  read_until: Date | null;
  requested_by: string;
  total: number;
  checked: number;
  summary: unknown;
  failure: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const runColumns = Prisma.sql`id::text AS id, date, number, time_zone, state::text AS state, whole_day, read_until, requested_by, total, checked, summary, failure, created_at, finished_at`;

function runOf(row: RunRow): SettlementRun {
  return {
    id: row.id,
    date: row.date,
    number: row.number,
    timeZone: row.time_zone,
    state: row.state,
    wholeDay: row.whole_day,
    readUntil: row.read_until,
    requestedBy: row.requested_by,
    total: row.total,
    checked: row.checked,
    summary: row.summary === null ? null : settlementSummarySchema.parse(row.summary),
    failure: row.failure,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
}

interface LineRow {
  kind: SettlementLineKind;
  item_id: string;
  wallet_id: string | null;
  result: SettlementItem['result'];
  currency: string;
  amount: Prisma.Decimal;
  wallet_status: string | null;
  wallet_amount: Prisma.Decimal | null;
  ledger_amount: Prisma.Decimal | null;
  detail: string | null;
}

function itemOf(row: LineRow): SettlementItem {
  const money = (value: Prisma.Decimal | null) => (value === null ? null : amountOf(fromNumeric(value), row.currency));
  return {
    kind: row.kind,
    id: row.item_id,
    walletId: row.wallet_id,
    result: row.result,
    amount: amountOf(fromNumeric(row.amount), row.currency),
    walletAmount: money(row.wallet_amount),
    walletStatus: row.wallet_status,
    ledgerAmount: money(row.ledger_amount),
    detail: row.detail,
  };
}

const emptyCounts = (): SettlementCounts => ({
  matched: 0,
  missing: 0,
  mismatched: 0,
  total: { count: 0, amount: amountOf(0n, 'PHP') },
});

/** What a run is started with: its day in its time zone, whether the day had ended, who asked. */
export interface RunStart {
  date: string;
  timeZone: string;
  /**
   * False for every run the service starts: its begin says (runs.begin). True: a run begun whole already (tests that
   * drive its pages themselves), which no begin changes.
   */
  wholeDay: boolean;
  requestedBy: string;
}

export function createSettlementRuns(database: Database) {
  async function find(runId: string): Promise<SettlementRun | null> {
    const rows = await database.$queryRaw<RunRow[]>`SELECT ${runColumns} FROM settlement_run WHERE id = ${runId}::uuid`;
    return rows[0] ? runOf(rows[0]) : null;
  }

  /** The day's RUNNING run, if any. */
  async function running(date: string): Promise<SettlementRun | null> {
    const rows = await database.$queryRaw<
      RunRow[]
    >`SELECT ${runColumns} FROM settlement_run WHERE date = ${date} AND state = 'RUNNING'`;
    return rows[0] ? runOf(rows[0]) : null;
  }

  /** A page of the run's lines after `after`, in (kind, item id) order, and where the next page starts (null: none). */
  async function page(
    runId: string,
    after: LineCursor | null,
    limit: number,
  ): Promise<{ items: SettlementItem[]; next: LineCursor | null }> {
    const rows = await database.$queryRaw<LineRow[]>`
      SELECT kind::text AS kind, item_id::text AS item_id, wallet_id, result::text AS result, currency, amount, wallet_status, wallet_amount, ledger_amount, detail
      FROM settlement_line
      WHERE run_id = ${runId}::uuid
        ${after ? Prisma.sql`AND (kind, item_id) > (${after.kind}::"SettlementLineKind", ${after.itemId}::uuid)` : Prisma.empty}
      ORDER BY kind, item_id
      LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit).map(itemOf);
    const last = items.at(-1);
    return { items, next: rows.length > limit && last ? { kind: last.kind, itemId: last.id } : null };
  }

  /**
   * A new run of the day, unless one is RUNNING: then that one; or none when `maxRunning` runs of other days are
   * RUNNING (`full`, with them). Starts take turns (a transaction-scoped advisory lock), so a burst of them, of one
   * day or many, makes at most one run of a day and never more than `maxRunning` in all, and each is answered with
   * what it found. With `unlessServed`, a day whose newest finished run it says answers for the day is answered with
   * that run (`reported`) and none is started: a GET that found no report while another request's run was finishing
   * the day (a run is never RUNNING again once it ends: the read after this turn's read of the RUNNING runs sees it).
   */
  const startWithin = (
    input: RunStart,
    maxRunning: number,
    unlessServed?: (finished: SettlementRun) => boolean,
  ): Promise<
    | { kind: 'started' | 'running'; run: SettlementRun }
    | { kind: 'reported'; run: SettlementRun }
    | { kind: 'full'; running: SettlementRun[]; startedAWhileAgo: Set<string> }
    | { kind: 'numbered' }
  > =>
    database.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended('walletflow:settlement-run-start', 0))`;
      // With those begun over a minute ago by the database's clock (a workflow Temporal has never seen is a refused
      // start), in the same statement: a second one would see a run another request gave up meanwhile as not RUNNING
      // (READ COMMITTED reads each statement's own snapshot), leave it out, and that run's place would be kept.
      const running = await tx.$queryRaw<Array<RunRow & { a_while_ago: boolean }>>`
        SELECT ${runColumns}, created_at < now() - interval '1 minute' AS a_while_ago
        FROM settlement_run WHERE state = 'RUNNING' ORDER BY created_at, id`;
      const open = running.map(runOf);
      const current = open.find((run) => run.date === input.date);
      if (current) return { kind: 'running' as const, run: current };
      if (unlessServed) {
        const [finished] = (
          await tx.$queryRaw<RunRow[]>`
            SELECT ${runColumns} FROM settlement_run WHERE date = ${input.date} AND state = 'SUCCEEDED'
            ORDER BY number DESC LIMIT 1`
        ).map(runOf);
        if (finished && unlessServed(finished)) return { kind: 'reported' as const, run: finished };
      }
      if (open.length >= maxRunning) {
        const startedAWhileAgo = new Set(running.filter((row) => row.a_while_ago).map((row) => row.id));
        return { kind: 'full' as const, running: open, startedAWhileAgo };
      }
      const rows = await tx.$queryRaw<RunRow[]>`
        INSERT INTO settlement_run (id, date, number, time_zone, whole_day, requested_by)
        SELECT ${randomUUID()}::uuid, ${input.date}, COALESCE(MAX(number), 0) + 1, ${input.timeZone}, ${input.wholeDay}, ${input.requestedBy.slice(0, 128)}
        FROM settlement_run WHERE date = ${input.date}
        ON CONFLICT DO NOTHING
        RETURNING ${runColumns}`;
      if (rows[0]) return { kind: 'started' as const, run: runOf(rows[0]) };
      // A process of the previous release, which takes no turn, started the day's run meanwhile: that one.
      const started = (
        await tx.$queryRaw<RunRow[]>`
          SELECT ${runColumns} FROM settlement_run WHERE date = ${input.date} AND state = 'RUNNING'`
      ).map(runOf)[0];
      if (started) return { kind: 'running' as const, run: started };
      // Its next number taken by a run that has already ended (the previous release's, which takes no turn): try again.
      return { kind: 'numbered' as const };
    });

  return {
    find,
    running,
    page,
    startWithin,

    /** The day's RUNNING run and its newest SUCCEEDED one (the report served), each null when there is none. */
    async latest(date: string): Promise<{ running: SettlementRun | null; finished: SettlementRun | null }> {
      const rows = await database.$queryRaw<RunRow[]>`
        (SELECT ${runColumns} FROM settlement_run WHERE date = ${date} AND state = 'RUNNING')
        UNION ALL
        (SELECT ${runColumns} FROM settlement_run WHERE date = ${date} AND state = 'SUCCEEDED' ORDER BY number DESC LIMIT 1)`;
      const runs = rows.map(runOf);
      return {
        running: runs.find((run) => run.state === 'RUNNING') ?? null,
        finished: runs.find((run) => run.state === 'SUCCEEDED') ?? null,
      };
    },

    /** A new run of the day, unless one is RUNNING: then that one (as startWithin, however many other days run). */
    async start(input: RunStart): Promise<{ kind: 'started' | 'running'; run: SettlementRun }> {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const started = await startWithin(input, Number.POSITIVE_INFINITY);
        if (started.kind === 'started' || started.kind === 'running') return started;
      }
      throw new Error(`could not start a settlement run of ${input.date}`);
    },

    /**
     * Gives a RUNNING run up (its workflow closed without finishing): FAILED with the reason, so the day may run again.
     * Whether it was RUNNING (false: it had finished or been given up meanwhile, and nothing changed).
     */
    async fail(runId: string, failure: string): Promise<boolean> {
      const changed = await database.$executeRaw`
        UPDATE settlement_run SET state = 'FAILED', failure = ${failure.slice(0, 200)}, finished_at = now() WHERE id = ${runId}::uuid AND state = 'RUNNING'`;
      return changed > 0;
    },

    /**
     * The day's items to check, counted as the run begins; `wholeDay`: it begins reading once the day is over (its
     * grace too), by the database's clock, so it covers the whole of it, whenever it was asked for. It alone says so:
     * whatever the run was started with is replaced. `readUntil`: where a report of the day so far stops reading (null:
     * the whole day). Written once: a run already begun (whole, or read until an instant) keeps what its first begin
     * wrote, whichever attempt comes later (one overtaken while paused, its worker frozen past its time-out, would
     * otherwise narrow a whole day's run its pages are reading); answers what the run holds.
     */
    async begin(
      runId: string,
      total: number,
      wholeDay: boolean,
      readUntil: Date | null,
    ): Promise<{ total: number; wholeDay: boolean; readUntil: Date | null }> {
      const [row] = await database.$queryRaw<
        Array<{ state: string; total: number; whole_day: boolean; read_until: Date | null }>
      >`
        WITH began AS (
          UPDATE settlement_run SET total = GREATEST(${total}, checked), whole_day = ${wholeDay}, read_until = ${readUntil}
          WHERE id = ${runId}::uuid AND state = 'RUNNING' AND NOT whole_day AND read_until IS NULL
          RETURNING state::text AS state, total, whole_day, read_until)
        SELECT state, total, whole_day, read_until FROM began
        UNION ALL
        SELECT state::text, total, whole_day, read_until FROM settlement_run
        WHERE id = ${runId}::uuid AND NOT EXISTS (SELECT 1 FROM began)`;
      if (!row || row.state !== 'RUNNING') throw new SettlementRunNotRunning(runId);
      return { total: row.total, wholeDay: row.whole_day, readUntil: row.read_until };
    },

    /**
     * Which of these items already have a line in the run (a resumed run skips them); `withWalletRecord`: only those
     * whose line holds the wallet's record (it described them).
     */
    async storedItems(
      runId: string,
      kind: SettlementLineKind,
      itemIds: readonly string[],
      { withWalletRecord = false }: { withWalletRecord?: boolean } = {},
    ): Promise<Set<string>> {
      if (itemIds.length === 0) return new Set();
      const rows = await database.$queryRaw<Array<{ item_id: string }>>`
        SELECT item_id::text AS item_id FROM settlement_line
        WHERE run_id = ${runId}::uuid AND kind = ${kind}::"SettlementLineKind" AND item_id = ANY(${[...itemIds]}::uuid[])
          ${withWalletRecord ? Prisma.sql`AND wallet_status IS NOT NULL` : Prisma.empty}`;
      return new Set(rows.map((row) => row.item_id));
    },

    /**
     * A transfer of the run the wallet described (its funding line holds the wallet's record), the first at or past a
     * random point of the lines' order (one index seek; another each time, however many times it is asked); null when
     * none yet.
     */
    async describedTransfer(runId: string): Promise<string | null> {
      const from = async (pivot: string) =>
        (
          await database.$queryRaw<Array<{ wallet_id: string }>>`
            SELECT wallet_id FROM settlement_line
            WHERE run_id = ${runId}::uuid AND kind = 'funding'::"SettlementLineKind" AND item_id >= ${pivot}::uuid
              AND wallet_status IS NOT NULL AND wallet_id IS NOT NULL
            ORDER BY item_id LIMIT 1`
        )[0]?.wallet_id ?? null;
      return (await from(randomUUID())) ?? from('00000000-0000-0000-0000-000000000000');
    },

    /**
     * A page of lines and the run's progress, in one transaction: a line already stored is left as
     * it was and not counted again. Throws SettlementRunNotRunning (nothing stored) once the run
     * is no longer RUNNING. Answers how many lines were new.
     */
    async store(runId: string, items: readonly SettlementItem[]): Promise<number> {
      if (items.length === 0) return 0;
      const column = <T>(pick: (item: SettlementItem) => T) => items.map(pick);
      const numeric = (amount: { value: string } | null) =>
        amount === null ? null : toNumeric(thousandthsIn(amount.value));
      return database.$transaction(async (tx) => {
        const inserted = await tx.$executeRaw`
          INSERT INTO settlement_line (run_id, kind, item_id, wallet_id, result, currency, amount, wallet_status, wallet_amount, ledger_amount, detail)
          SELECT ${runId}::uuid, l.kind::"SettlementLineKind", l.item_id, l.wallet_id, l.result::"SettlementResult", l.currency, l.amount, l.wallet_status,
                 l.wallet_amount, l.ledger_amount, l.detail
          FROM unnest(${column((item) => item.kind)}::text[], ${column((item) => item.id)}::uuid[], ${column((item) => item.walletId)}::text[],
                      ${column((item) => item.result)}::text[], ${column((item) => item.amount.currency)}::text[], ${column((item) => numeric(item.amount))}::numeric[],
                      ${column((item) => item.walletStatus)}::text[], ${column((item) => numeric(item.walletAmount))}::numeric[],
                      ${column((item) => numeric(item.ledgerAmount))}::numeric[], ${column((item) => item.detail?.slice(0, 500) ?? null)}::text[])
            AS l(kind, item_id, wallet_id, result, currency, amount, wallet_status, wallet_amount, ledger_amount, detail)
          ORDER BY l.kind, l.item_id
          ON CONFLICT DO NOTHING`;
        const updated = await tx.$executeRaw`
          UPDATE settlement_run SET checked = checked + ${inserted}, total = GREATEST(total, checked + ${inserted})
          WHERE id = ${runId}::uuid AND state = 'RUNNING'`;
        if (updated === 0) throw new SettlementRunNotRunning(runId);
        return inserted;
      });
    },

    /**
     * The run's end: the day's counts from its lines, SUCCEEDED. The day's earlier runs keep their
     * lines: each is the record of what was checked when, and a client paging one goes on reading it.
     */
    async finish(runId: string): Promise<SettlementRun> {
      return database.$transaction(async (tx) => {
        // The run's row first: a store under way (an overtaken attempt's) is counted once it commits, or
        // waits and then finds the run no longer RUNNING; the counts below and the total agree either way.
        const locked = await tx.$queryRaw<Array<{ id: string }>>`
          SELECT id::text AS id FROM settlement_run WHERE id = ${runId}::uuid AND state = 'RUNNING' FOR UPDATE`;
        if (!locked[0]) throw new SettlementRunNotRunning(runId);
        const rows = await tx.$queryRaw<
          Array<{ kind: SettlementLineKind; result: SettlementItem['result']; count: bigint; amount: Prisma.Decimal }>
        >`
          SELECT kind, result::text AS result, count(*) AS count, COALESCE(sum(amount), 0) AS amount FROM settlement_line WHERE run_id = ${runId}::uuid GROUP BY kind, result`;
        const summary: SettlementSummary = { fundings: emptyCounts(), payments: emptyCounts() };
        const sums = { fundings: 0n, payments: 0n };
        for (const row of rows) {
          const side = row.kind === 'funding' ? 'fundings' : 'payments';
          summary[side][row.result] += Number(row.count);
          summary[side].total.count += Number(row.count);
          sums[side] += fromNumeric(row.amount);
        }
        // As the report has always summed them: every currency's amounts together, shown as PHP.
        summary.fundings.total.amount = amountOf(sums.fundings, 'PHP');
        summary.payments.total.amount = amountOf(sums.payments, 'PHP');
        const finished = await tx.$queryRaw<RunRow[]>`
          UPDATE settlement_run SET state = 'SUCCEEDED', summary = ${JSON.stringify(summary)}::jsonb, total = checked, finished_at = now()
          WHERE id = ${runId}::uuid AND state = 'RUNNING'
          RETURNING ${runColumns}`;
        if (!finished[0]) throw new SettlementRunNotRunning(runId);
        return runOf(finished[0]);
      });
    },

    /** Every line of the run, read a page at a time (the CSV): never more than a page in memory. */
    async *lines(runId: string, pageSize = 1000): AsyncGenerator<SettlementItem> {
      let after: LineCursor | null = null;
      do {
        const lines: { items: SettlementItem[]; next: LineCursor | null } = await page(runId, after, pageSize);
        yield* lines.items;
        after = lines.next;
      } while (after);
    },
  };
}

export type SettlementRuns = ReturnType<typeof createSettlementRuns>;
