// `walletflow bench --console` in a small configuration (3,000 fundings and 600 payments preloaded
// over a small database of a hundredth of that, a batch of 2,000 items, 3 timed requests a page):
// the report names every console page on both sides with positive figures, every page answered 200
// (signed in with the stack's ops key through the sign-in form), and the table is printed. No
// wall-clock bound is asserted: the figures depend on the machine.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleBenchReportSchema, consolePageNames } from '../../harness/bench-console.ts';
import { runLongCli } from '../support/cli-run.ts';

describe('walletflow bench --console', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('measures every console page on a small database and with the preload, each answering 200', async () => {
    out = await mkdtemp(path.join(tmpdir(), 'walletflow-console-bench-test-'));
    const { code, output } = await runLongCli(
      [
        'bench',
        '--console',
        '--preload-fundings',
        '3000',
        '--preload-payments',
        '600',
        '--console-batch-items',
        '2000',
        '--console-requests',
        '3',
        '--out',
        out,
        '--name',
        'tiny-console',
      ],
      // The bench compiles the API and worker first, then starts a stack of its own: minutes on a busy machine.
      { timeoutMs: 420_000, graceMs: 20_000 },
    );
    expect(code, output).toBe(0);
    const report = consoleBenchReportSchema.parse(
      JSON.parse(await readFile(path.join(out, 'tiny-console.json'), 'utf8')),
    );
    expect(report.options).toEqual({ fundings: 3000, payments: 600, batchItems: 2000, requests: 3 });
    expect(report.preload).toMatchObject({ fundings: 3000, payments: 600 });
    expect(report.seed).toMatchObject({ fundings: 30, payments: 6 });
    expect(report.seedConsole.batchItems).toBeGreaterThanOrEqual(2000);
    expect(report.preloadConsole.deliveries).toBeGreaterThan(0);
    for (const side of [report.empty, report.preloaded]) {
      expect(Object.keys(side.pages).sort()).toEqual([...consolePageNames].sort());
      for (const page of consolePageNames) {
        const figures = side.pages[page]!;
        expect(figures.statuses, `${page}: ${figures.path}`).toEqual({ '200': 3 });
        expect(figures.failed, page).toBe(0);
        expect(figures.latencyMs.p50, page).toBeGreaterThan(0);
        expect(figures.latencyMs.p95, page).toBeGreaterThanOrEqual(figures.latencyMs.p50);
        expect(figures.bytes, page).toBeGreaterThan(0);
      }
    }
    for (const page of consolePageNames) expect(report.ratioP95[page], page).toBeGreaterThan(0);
    // The same pages on both sides: the batch's items by status, its middle page by cursor.
    expect(report.preloaded.pages['batch items: middle page']!.path).toBe(
      report.empty.pages['batch items: middle page']!.path,
    );
    expect(report.empty.pages['batch items: middle page']!.path).toContain('cursor=ITEM-0001000');
    expect(output).toContain(
      '| page | small p50 ms | small p95 ms | preloaded p50 ms | preloaded p95 ms | ratio (p95) | target p95 |',
    );
  }, 480_000);
});
