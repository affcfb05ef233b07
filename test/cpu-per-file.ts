// With WALLETFLOW_TEST_CPU_FILE set (scripts/test.sh sets it), appends a line per test file to that file: its path, the
// CPU seconds its process and the children it waited for used from this file's start (the processes it started: API,
// workers, the CLI, Chromium), its wall seconds, when it ended (the run's timeline) and its vitest project. Linux only
// (/proc/self/stat); the suite's shared PostgreSQL and Temporal are not in it. `npm run test:durations` records it in
// test/file-durations.json for the start order (test/start-order.ts); docs/testing.md has the figures.
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll } from 'vitest';

const report = process.env.WALLETFLOW_TEST_CPU_FILE;

/** utime + stime + cutime + cstime of this process, in seconds (fields 14 to 17 of /proc/self/stat). */
function cpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0) / 100;
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
