// The processes there are and their command lines, read from /proc (harness/process-usage.ts; Linux only, elsewhere
// none), and the CPU of processes a test started that this process will never wait for, for the per-file figures
// (test/cpu-per-file.ts): a process's own figure counts only the children it waited for, and Chromium's zygotes and
// their renderers outlive the browser this process waits for; closeChromium (browser.ts) counts them here.
import { readFileSync, readdirSync } from 'node:fs';
import { processStatOf, type ProcessStat } from '../../harness/process-usage.ts';

/** The command line of process `pid`, its arguments joined by spaces ('' when it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** Every process there is now. */
export function allProcesses(): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => processStatOf(Number(entry)))
    .filter((stat): stat is ProcessStat => stat !== null);
}

// One figure per test process, whichever copy of this module a file loaded.
const uncollected = Symbol.for('walletflow.test.uncollectedCpuSeconds');
type WithUncollected = typeof globalThis & { [uncollected]?: number };

/** Counts `seconds` of CPU used by processes this process started and will not wait for. */
export function addUncollectedCpu(seconds: number): void {
  const global = globalThis as WithUncollected;
  global[uncollected] = (global[uncollected] ?? 0) + seconds;
}

/** The CPU counted by addUncollectedCpu so far in this process. */
export function uncollectedCpuSeconds(): number {
  return (globalThis as WithUncollected)[uncollected] ?? 0;
}
