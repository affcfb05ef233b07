// `walletflow bench` in a tiny configuration (one level, two seconds, one second of session URL):
// the report has its shape and its figures are positive numbers, and the chart is written. No
// wall-clock bound is asserted: the figures depend on the machine.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchReportSchema } from '../../harness/bench-report.ts';

const root = path.resolve(import.meta.dirname, '../..');

function runBench(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'cli/main.ts'), 'bench', ...args], { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('walletflow bench', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('writes a report of the right shape with positive figures, and its chart', async () => {
    out = await mkdtemp(path.join(tmpdir(), 'walletflow-bench-test-'));
    const { code, output } = await runBench(['--levels', '2', '--seconds', '2', '--session-seconds', '1', '--session-connections', '2', '--out', out, '--name', 'tiny'], 150_000);
    expect(code, output).toBe(0);
    const report = benchReportSchema.parse(JSON.parse(await readFile(path.join(out, 'tiny.json'), 'utf8')));
    expect(report).toMatchObject({ name: 'tiny', temporal: 'dev-server', workers: 1, options: { levels: [2], seconds: 2 } });
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
    for (const name of ['api', 'worker', 'temporal']) {
      expect(level!.walletflow.processes[name]?.peakRssMiB, name).toBeGreaterThan(0);
    }
    expect(report.session?.requestsPerSecond).toBeGreaterThan(0);
    expect(report.session?.latencyMs.p99).toBeGreaterThan(0);
    const svg = await readFile(path.join(out, 'tiny.svg'), 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('baseline (wallet client alone)');
    expect(output).toContain('| concurrency | walletflow fundings/s |');
  }, 180_000);
});
