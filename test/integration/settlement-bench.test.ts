// `walletflow bench --settlement` at a small size (a day of 300 approved fundings): the report has
// its shape, the day settled with every line matched and each transfer retrieved once, the single
// fundings sent beside it were accepted, the CSV came whole, and the table is printed. No
// wall-clock or memory bound is asserted: the figures depend on the machine (the aims are the
// bench's own, in its report's targets).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SettlementBenchReport } from '../../harness/bench.ts';
import { runLongCli } from '../support/cli-run.ts';

describe('walletflow bench --settlement', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('settles a planted day beside single fundings, against the wallet client alone, and reports it', async () => {
    out = await mkdtemp(path.join(tmpdir(), 'walletflow-settlement-bench-test-'));
    const { code, output } = await runLongCli(
      ['bench', '--settlement', '300', '--out', out, '--name', 'tiny-settlement'],
      // The bench compiles the API and worker first, then starts a stack of its own: minutes on a busy machine.
      { timeoutMs: 420_000, graceMs: 20_000 },
    );
    expect(code, output).toBe(0);
    const report = JSON.parse(await readFile(path.join(out, 'tiny-settlement.json'), 'utf8')) as SettlementBenchReport;
    const { run } = report;
    expect(report).toMatchObject({ name: 'tiny-settlement', temporal: 'dev-server', workers: 1, maxInFlight: 32 });
    expect(run.items).toBe(300);
    expect(run.baseline).toMatchObject({ retrieves: 300, failed: 0 });
    expect(run.baseline.perSecond).toBeGreaterThan(0);
    expect(run.settlement.counts).toEqual({ matched: 300, missing: 0, mismatched: 0, count: 300 });
    expect(run.settlement.retrieves).toBe(300);
    expect(run.settlement.seconds).toBeGreaterThan(0);
    for (const name of ['api', 'worker', 'temporal'])
      expect(run.settlement.processes[name]?.peakRssMiB, name).toBeGreaterThan(0);
    expect(run.settlement.history.runs).toBeGreaterThanOrEqual(1);
    expect(run.csv).toMatchObject({ lines: 1 + 300 + 2 });
    expect(run.singles.sent).toBeGreaterThan(0);
    expect(run.singles.statuses).toEqual({ '202': run.singles.sent });
    expect(run.singles.notFinal).toBe(0);
    expect(report.targets.map((target) => target.what)).toEqual(
      expect.arrayContaining(['the day settled', 'worker resident memory, peak']),
    );
    expect(output).toContain('walletflow: GET /ops/settlements');
    expect(output).toContain('baseline: the wallet client alone');
  }, 480_000);
});
