// `walletflow bench` in a tiny configuration (one level, two seconds, one second of session URL):
// the report has its shape and its figures are positive numbers, and the chart is written. No
// wall-clock bound is asserted: the figures depend on the machine.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchReportSchema } from '../../harness/bench-report.ts';
import { runLongCli } from '../support/cli-run.ts';

const runBench = (args: string[], timeoutMs: number) => runLongCli(['bench', ...args], { timeoutMs, graceMs: 20_000 });

describe('walletflow bench', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('writes a report of the right shape with positive figures, and its chart', async () => {
    out = await mkdtemp(path.join(tmpdir(), 'walletflow-bench-test-'));
    const { code, output } = await runBench(
      [
        '--levels',
        '2',
        '--seconds',
        '2',
        '--session-seconds',
        '1',
        '--session-connections',
        '2',
        '--burst-requests',
        '50',
        '--quiet-seconds',
        '1',
        '--out',
        out,
        '--name',
        'tiny',
      ],
      300_000,
    );
    expect(code, output).toBe(0);
    const report = benchReportSchema.parse(JSON.parse(await readFile(path.join(out, 'tiny.json'), 'utf8')));
    expect(report).toMatchObject({
      name: 'tiny',
      temporal: 'dev-server',
      workers: 1,
      options: { levels: [2], seconds: 2, quietSeconds: 1 },
    });
    expect(report.levels).toHaveLength(1);
    const [level] = report.levels;
    for (const side of [level!.walletflow, level!.baseline]) {
      expect(side.completed).toBeGreaterThan(0);
      expect(side.perSecond).toBeGreaterThan(0);
      expect(side.latencyMs.p50).toBeGreaterThan(0);
      expect(side.latencyMs.p99).toBeGreaterThanOrEqual(side.latencyMs.p50);
      expect(side.cpuMsPerItem).toBeGreaterThan(0);
    }
    expect(level!.walletflow.failed).toBe(0);
    expect(level!.ratio).toBeGreaterThan(0);
    // The lean floor, measured in the same run, and the shapes of both sides' histories.
    expect(level!.lean?.completed).toBeGreaterThan(0);
    expect(level!.lean?.failed).toBe(0);
    // Two activity tasks; three workflow tasks, or two where an activity's result came back before
    // the task that scheduled the next one completed (a loaded machine: the mean of the samples).
    expect(level!.lean?.history).toMatchObject({ activityTasks: 2 });
    expect(level!.lean?.history.workflowTasks).toBeGreaterThanOrEqual(2);
    expect(level!.lean?.history.workflowTasks).toBeLessThanOrEqual(3);
    expect(level!.walletflow.history).toMatchObject({ workflowTasks: 1, activityTasks: 0 });
    expect(level!.walletflow.transitionsPerItem).toBe(4);
    expect(level!.overheadRatio).toBeGreaterThan(0);
    expect(report.code).toBe('compiled');
    expect(report.workerRssMiBAfter?.worker).toBeGreaterThan(0);
    for (const name of ['api', 'worker', 'temporal']) {
      expect(level!.walletflow.processes[name]?.peakRssMiB, name).toBeGreaterThan(0);
    }
    expect(report.session?.requestsPerSecond).toBeGreaterThan(0);
    expect(report.session?.latencyMs.p99).toBeGreaterThan(0);
    // Memory at rest: after the worker onboarded every session the run stored, none left PENDING.
    expect(report.workerRssMiBAtRest?.worker).toBeGreaterThan(0);
    expect(report.onboarding).toMatchObject({ pending: 0 });
    // Users who opened the page during the session URL's run reached the money page.
    expect(report.session?.landers?.users).toBeGreaterThan(0);
    expect(report.session?.landers?.notReached).toBe(0);
    expect(report.session?.landers?.toMoneyPageMs.p99).toBeGreaterThan(0);
    // The burst: every request accepted in the end, none answered a 5xx other than a load refusal.
    expect(report.burst).toMatchObject({ requests: 50, accepted: 50, serverErrors: 0 });
    const svg = await readFile(path.join(out, 'tiny.svg'), 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('baseline (wallet client alone)');
    expect(output).toContain('| concurrency | walletflow fundings/s |');
    // Memory read after the quiet the run asked for (a test's second, not the default's ten).
    expect(output).toContain('Worker resident memory 1 s after the funding levels');
  }, 360_000);
});
