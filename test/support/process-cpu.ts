// CPU seconds of processes, read from /proc (Linux only; elsewhere every figure is 0), for the per-file figures
// (test/cpu-per-file.ts). A process's own figure counts the children it waited for; a process started by a test whose
// children outlive it and are never waited for by this process (Chromium's zygotes and their renderers) is counted
// here, by whoever closes it, through addUncollectedCpu.
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcessStat {
  pid: number;
  ppid: number;
  pgid: number;
  /** utime + stime + cutime + cstime: its own CPU and that of the children it waited for, in seconds. */
  cpuSeconds: number;
}

const ticksPerSecond = 100;

/** The stat of process `pid` (`self` for this one), or undefined when it is gone or /proc cannot be read. */
export function processStat(pid: number | 'self'): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    return {
      pid: pid === 'self' ? process.pid : pid,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      cpuSeconds: cpu / ticksPerSecond,
    };
  } catch {
    return undefined;
  }
}

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
    .map((entry) => processStat(Number(entry)))
    .filter((stat): stat is ProcessStat => stat !== undefined);
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
