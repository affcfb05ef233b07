// `walletflow settlement-report` against an ops API that serves a fresh run's report between two of the command's
// requests (another person's `--fresh` finished): what it prints and its exit code are of one run. A small HTTP server
// plays the API: the report's head is run A's; a request that names no run gets run B's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runSettlementReport } from '../../cli/ledger.ts';
import { exitCodes } from '../../cli/exit-codes.ts';

const counts = (matched: number, missing: number, mismatched: number) => ({
  matched,
  missing,
  mismatched,
  total: { count: matched + missing + mismatched, amount: { currency: 'PHP', value: '9.00' } },
});
const item = (id: string, result: string) => ({
  kind: 'funding',
  id,
  result,
  detail: result === 'matched' ? null : 'x',
});
const report = (runId: string, fundings: ReturnType<typeof counts>, items: unknown[], nextCursor: string | null) => ({
  date: '2026-01-01',
  timeZone: 'Asia/Manila',
  runId,
  settledAt: '2026-01-02T00:05:00.000Z',
  complete: true,
  fundings,
  payments: counts(0, 0, 0),
  items,
  nextCursor,
});
const totals = (missing: number, mismatched: number) =>
  ['fundings', 'payments']
    .map(
      (kind) =>
        `"total:${kind}","2026-01-01","","matched=1 missing=${missing} mismatched=${mismatched}","PHP","9.00","","","",""\r\n`,
    )
    .join('');

let server: Server;
/** How many times the day with runs of other days under way was asked for. */
let busyAnswers = 0;
let api: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api');
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname.endsWith('2026-01-08')) {
      // Today, not over in SETTLEMENT_TZ: a report of the day so far, every line matched.
      if (url.searchParams.get('format') === 'csv') {
        res.writeHead(200, { 'content-type': 'text/csv', 'settlement-complete': 'false' });
        res.end(
          `kind,id,result\r\n"funding","e-1","matched"\r\n` +
            ['fundings', 'payments']
              .map(
                (kind) =>
                  `"total:${kind}","2026-01-08","","matched=1 missing=0 mismatched=0","PHP","9.00","","","","1 items; the day so far, not the whole day (events up to 2026-01-08T06:58:00.000Z, settled at 2026-01-08T07:00:01.000Z)"\r\n`,
              )
              .join(''),
        );
      } else
        json({
          ...report('E', counts(1, 0, 0), [item('e-1', 'matched')], null),
          date: '2026-01-08',
          complete: false,
          readUntil: '2026-01-08T06:58:00.000Z',
        });
    } else if (url.pathname.endsWith('2026-01-06')) {
      // Two runs of other days under way (SETTLEMENT_MAX_RUNS): the first ask is refused, the next served.
      busyAnswers += 1;
      if (busyAnswers === 1) {
        res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
        res.end(
          JSON.stringify({
            title: 'Service Unavailable',
            status: 503,
            code: 'OVERLOADED',
            detail: '2 settlement runs are under way',
          }),
        );
      } else json({ ...report('D', counts(1, 0, 0), [item('d-1', 'matched')], null), date: '2026-01-06' });
    } else if (url.pathname.endsWith('2026-01-05')) {
      // A day of two pages whose second the API cannot answer (503 OVERLOADED at the end of the day's load).
      if (url.searchParams.get('cursor') === 'run-c-2') {
        res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
        res.end(JSON.stringify({ title: 'Service Unavailable', status: 503, code: 'OVERLOADED', detail: 'busy' }));
      } else json({ ...report('C', counts(2, 0, 0), [item('c-1', 'matched')], 'run-c-2'), date: '2026-01-05' });
    } else if (req.method === 'POST' && url.pathname === '/ops/settlements/2026-01-03/runs') {
      // Our fresh run, R2, begun at midnight and a second.
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          date: '2026-01-03',
          state: 'RUNNING',
          checked: 0,
          total: 1,
          runId: 'R2',
          startedAt: '2026-01-04T00:00:01.000Z',
        }),
      );
    } else if (url.pathname.endsWith('2026-01-03'))
      // R2 never served: a run settled after it began (R3: another person's fresh run, or the whole-day run that
      // replaced it after midnight) is.
      json({
        ...report('R3', counts(1, 0, 0), [item('r3-1', 'matched')], null),
        settledAt: '2026-01-04T00:03:00.000Z',
      });
    else if (url.searchParams.get('format') === 'csv') {
      // Run B's file: a line mismatched.
      res.writeHead(200, { 'content-type': 'text/csv' });
      res.end(`kind,id,result\r\n"funding","b-1","mismatched"\r\n${totals(0, 1)}`);
    } else if (url.searchParams.get('cursor') === 'run-a-2')
      json(report('A', counts(1, 1, 0), [item('a-2', 'missing')], null));
    // The head: run A's, clean on the first day, a line missing on the second.
    else if (url.searchParams.get('limit') === '1')
      json(
        url.pathname.endsWith('2026-01-01')
          ? report('A', counts(1, 0, 0), [item('a-1', 'matched')], null)
          : report('A', counts(1, 1, 0), [item('a-1', 'matched')], 'run-a-2'),
      );
    // No cursor, a page of 1000: the latest run's, B's.
    else json(report('B', counts(0, 0, 1), [item('b-1', 'mismatched')], null));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function run(
  output: 'csv' | 'text' | 'json',
  date: string,
  fresh = false,
): Promise<{ code: number; printed: string }> {
  const printed: string[] = [];
  vi.stubEnv('WALLETFLOW_OPS_KEY', 'k'.repeat(40));
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((text) => printed.push(String(text)) > 0);
  try {
    const code = await runSettlementReport({ api, date, output, fresh });
    return { code, printed: printed.join('') };
  } finally {
    write.mockRestore();
    vi.unstubAllEnvs();
  }
}

describe('walletflow settlement-report beside a fresh run', () => {
  it('refuses a --date that is no calendar day before any request: exit 64, the usage code its help gives', async () => {
    // An API no one listens on: a request sent would end with another code. Before: sent, and its 400 was exit 3.
    vi.stubEnv('WALLETFLOW_OPS_KEY', 'k'.repeat(40));
    try {
      for (const date of ['2026-02-30', '26-1-1'])
        expect(await runSettlementReport({ api: 'http://127.0.0.1:9', date, output: 'text' }), date).toBe(
          exitCodes.usage,
        );
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('--output csv: exits by the totals of the file it printed (B: a line mismatched), not by the head it read first (A)', async () => {
    const { code, printed } = await run('csv', '2026-01-01');
    expect(printed).toContain('"b-1","mismatched"');
    expect(code).toBe(exitCodes.failed);
  });

  it('--fresh: stops at a report at least as fresh as its run (one settled after it began), not only at its own', async () => {
    // It asked for R2's report only, and so followed for ever a day whose R2 was overtaken.
    const { code, printed } = await run('text', '2026-01-03', true);
    expect(code).toBe(exitCodes.ok);
    expect(printed).toContain('settlement of 2026-01-01');
  }, 15_000);

  it('asks again while runs of other days fill every place (503 OVERLOADED), then prints the report', async () => {
    // Before: exit 3 at the first 503, where a script settling a month day by day wants each day.
    const { code, printed } = await run('text', '2026-01-06');
    expect(code).toBe(exitCodes.ok);
    expect(printed).toContain('settlement of 2026-01-06');
    expect(busyAnswers).toBe(2);
  }, 15_000);

  it('--output json: prints the whole report or nothing, never the pages read before one that failed', async () => {
    const { code, printed } = await run('json', '2026-01-05');
    expect(code).toBe(exitCodes.api);
    // Before: the head and the first page's lines, an unclosed document a job's `> day.json` kept.
    expect(printed).toBe('');
    const whole = await run('json', '2026-01-01');
    // A whole one, printed as one document (the latest run's, B's: a line mismatched).
    expect(whole.code).toBe(exitCodes.failed);
    expect(JSON.parse(whole.printed)).toMatchObject({ runId: 'B', items: [{ id: 'b-1' }], nextCursor: null });
  });

  it('exits 4, not 0, for a report of the day so far whose every line matched, in every output: a job does not take today for the day', async () => {
    // Found by a read: a cron job on a host in another time zone asked for "today" and read exit 0, "every item
    // matched", from a report of the day so far.
    for (const output of ['text', 'csv', 'json'] as const) {
      const { code, printed } = await run(output, '2026-01-08');
      expect(code, output).toBe(exitCodes.daySoFar);
      expect(printed, output).toContain('2026-01-08');
    }
  });

  it('the table: lists the problems of the run whose counts it printed, by that run’s cursor', async () => {
    const { code, printed } = await run('text', '2026-01-02');
    expect(code).toBe(exitCodes.failed);
    expect(printed).toContain('a-2');
    expect(printed).not.toContain('b-1');
  });
});
