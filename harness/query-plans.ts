// The query plans behind the hot paths (docs/benchmarks.md, flat with data): a Prisma client whose
// every statement is recorded as sent (text and parameters, through the pg pool under the adapter),
// and EXPLAIN (FORMAT JSON) of a recorded statement with its own parameters, reduced to the scans
// it plans (node type, table, index). The test runs the real record and ledger code on a preloaded
// database and asserts that no hot statement plans a sequential scan of a big table.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';

export interface RecordedStatement {
  text: string;
  values: unknown[];
  /** The `SET LOCAL` statements sent before it in its transaction (`inIndexOrder`): its plan is made under them. */
  settings?: string[];
}

/** The tables that grow with history: a sequential scan of one of them is not flat with data. */
export const historyTables = [
  'funding',
  'funding_event',
  'payment',
  'payment_event',
  'ledger_transaction',
  'ledger_entry',
  'ledger_account',
  'webhook_event',
  'link',
] as const;

export interface PlannedScan {
  /** The plan node: "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Seq Scan", … */
  node: string;
  table?: string;
  index?: string;
}

/** A Prisma client on `databaseUrl` that records every statement it sends, in order. */
export function recordingDatabase(databaseUrl: string): {
  database: Database;
  statements: RecordedStatement[];
  close(): Promise<void>;
} {
  const statements: RecordedStatement[] = [];
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  // An idle client ended by the server (its database dropped after the test) is not a failure.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let settings: string[] = [];
    const record = (text: string, values: unknown[]) => {
      if (/^\s*(BEGIN|COMMIT|ROLLBACK)\b/i.test(text)) settings = [];
      statements.push({ text, values, settings });
      if (/^\s*SET\s+LOCAL\b/i.test(text)) settings = [...settings, text];
    };
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first, second] = args;
      if (typeof first === 'string') record(first, Array.isArray(second) ? second : []);
      else if (first && typeof first === 'object' && 'text' in first) {
        const config = first as { text: string; values?: unknown[] };
        record(config.text, config.values ?? []);
      }
      return query(...args);
    };
  });
  const database = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    database,
    statements,
    async close() {
      await database.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}

/** Whether a recorded statement reads or changes rows through a plan worth looking at. */
export function isPlannable(statement: RecordedStatement): boolean {
  return /^\s*(SELECT|WITH|UPDATE|DELETE|INSERT\s+INTO\s+\S+\s*(\([^)]*\))?\s*SELECT)\b/i.test(statement.text);
}

function scansOf(node: Record<string, unknown>, into: PlannedScan[]): PlannedScan[] {
  const type = String(node['Node Type']);
  if (/Scan/.test(type)) {
    into.push({
      node: type,
      ...(typeof node['Relation Name'] === 'string' ? { table: node['Relation Name'] } : {}),
      ...(typeof node['Index Name'] === 'string' ? { index: node['Index Name'] } : {}),
    });
  }
  for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) scansOf(child, into);
  return into;
}

/**
 * The plan of `statement` in a transaction rolled back, under the settings it was sent under: EXPLAIN (FORMAT JSON)
 * with `options` and its own parameters.
 */
async function planOf(
  client: pg.ClientBase,
  statement: RecordedStatement,
  options: string,
): Promise<Record<string, unknown> | undefined> {
  await client.query({ text: 'BEGIN' });
  try {
    for (const setting of statement.settings ?? []) await client.query({ text: setting });
    const result = await client.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> }>({
      text: `EXPLAIN (${options}) ${statement.text}`,
      values: statement.values,
    });
    return result.rows[0]?.['QUERY PLAN'][0]?.Plan;
  } finally {
    await client.query({ text: 'ROLLBACK' });
  }
}

/** EXPLAIN (FORMAT JSON) of `statement` with its own parameters (not run): the scans it plans. */
export async function plannedScans(client: pg.ClientBase, statement: RecordedStatement): Promise<PlannedScan[]> {
  const plan = await planOf(client, statement, 'FORMAT JSON');
  return plan ? scansOf(plan, []) : [];
}

/** The scans of `scans` that read a whole history table: what a flat query must not plan. */
export function fullScans(scans: PlannedScan[]): PlannedScan[] {
  return scans.filter(
    (scan) => scan.node === 'Seq Scan' && (historyTables as readonly string[]).includes(scan.table ?? ''),
  );
}

/**
 * How many rows of `table` the statement reads as it runs (EXPLAIN ANALYZE with its own parameters,
 * inside a transaction rolled back, so a write leaves nothing): each scan's rows returned and the
 * rows it read and filtered out, over every loop. What a page costs, whatever the machine's speed.
 */
export async function rowsExamined(
  client: pg.ClientBase,
  statement: RecordedStatement,
  table: string,
): Promise<number> {
  const visit = (node: Record<string, unknown>): number => {
    const loops = Number(node['Actual Loops'] ?? 1);
    const own =
      node['Relation Name'] === table
        ? (Number(node['Actual Rows'] ?? 0) +
            Number(node['Rows Removed by Filter'] ?? 0) +
            Number(node['Rows Removed by Index Recheck'] ?? 0)) *
          loops
        : 0;
    return (
      own +
      ((node.Plans as Array<Record<string, unknown>> | undefined) ?? []).reduce((sum, child) => sum + visit(child), 0)
    );
  };
  const plan = await planOf(client, statement, 'ANALYZE, FORMAT JSON');
  return plan ? visit(plan) : 0;
}

/**
 * The blocks of index `index` that running `statement` (with its own parameters and settings) read, from PostgreSQL's
 * own counters (`pg_statio_user_indexes`, this backend's flushed before and after): what a scan walked in the index,
 * entries its index condition threw away included, which EXPLAIN's rows do not count. The counters are the database's:
 * another backend's flush in between (one that read the index a moment before, autovacuum) adds to one measure, never
 * takes from it, so the statement is measured three times and the least is the answer.
 */
export async function indexBlocksRead(
  client: pg.ClientBase,
  statement: RecordedStatement,
  index: string,
): Promise<number> {
  const blocks = async () => {
    // This backend's counters flushed now (not within the second they would otherwise wait), then read afresh.
    await client.query('SELECT pg_stat_force_next_flush()');
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ blocks: string }>(
      'SELECT (idx_blks_hit + idx_blks_read)::text AS blocks FROM pg_statio_user_indexes WHERE indexrelname = $1',
      [index],
    );
    if (!rows[0]) throw new Error(`no index ${index}`);
    return Number(rows[0].blocks);
  };
  const measures: number[] = [];
  for (let measure = 0; measure < 3; measure += 1) {
    const before = await blocks();
    await client.query({ text: 'BEGIN' });
    try {
      for (const setting of statement.settings ?? []) await client.query({ text: setting });
      await client.query({ text: statement.text, values: statement.values });
    } finally {
      await client.query({ text: 'ROLLBACK' });
    }
    measures.push((await blocks()) - before);
  }
  return Math.min(...measures);
}
