// With WALLETFLOW_TEST_CPU_FILE set (scripts/test.sh sets it), appends a line per test file to that file: its path, the
// CPU seconds its process and the children it waited for used from this file's start (the processes it started: API,
// workers, the CLI, Chromium: its renderers through closeChromium, test/support/browser.ts), its wall seconds, when it
// ended (the run's timeline) and its vitest project. Linux only (/proc); the suite's shared PostgreSQL and Temporal are
// not in it. `npm run test:durations` records it in test/file-durations.json for the start order
// (test/start-order.ts); docs/testing.md has the figures.
import { appendFileSync } from 'node:fs';
import { afterAll } from 'vitest';
import { processStatOf } from '../harness/process-usage.ts';
import { uncollectedCpuSeconds } from './support/process-cpu.ts';

const report = process.env.WALLETFLOW_TEST_CPU_FILE;

/** This process's CPU with its children's it waited for, and that of children it will not wait for (Chromium's). */
function cpuSeconds(): number {
  const self = processStatOf('self');
  return (self ? self.cpuSeconds + self.childrenCpuSeconds : 0) + uncollectedCpuSeconds();
}

if (report) {
  const started = { cpu: cpuSeconds(), at: Date.now() };
  // vitest reads the first argument's pattern for fixtures (none here); the file's suite is the second.
  // eslint-disable-next-line no-empty-pattern
  afterAll(({}, suite) => {
    const { filepath, projectName } = suite as { filepath?: string; projectName?: string };
    const file = filepath ?? '?';
    const cpu = cpuSeconds() - started.cpu;
    const wall = ((Date.now() - started.at) / 1000).toFixed(1);
    const ended = new Date().toISOString();
    appendFileSync(report, `${file}\t${cpu.toFixed(1)}\t${wall}\t${ended}\t${projectName ?? ''}\n`);
  });
}
