// CPU and memory of running processes, read from Linux's /proc (no dependency): CPU time, parent and process group
// from /proc/<pid>/stat (times in clock ticks), resident memory from /proc/<pid>/status.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ProcessUsage {
  /** CPU time over the window as a percentage of one core (200 = two cores busy). */
  cpuPercent: number;
  /** CPU time over the window, s. */
  cpuSeconds: number;
  /** Highest resident set size seen during the window, MiB. */
  peakRssMiB: number;
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** A process as /proc/<pid>/stat tells it. */
export interface ProcessStat {
  pid: number;
  ppid: number;
  /** Its process group. */
  pgid: number;
  /** CPU seconds (user + system) it has used so far. */
  cpuSeconds: number;
  /** CPU seconds of the children it waited for (cutime + cstime), which its own leave out. */
  childrenCpuSeconds: number;
}

/** Process `pid` (`self`: this one) as /proc/<pid>/stat tells it; null when it is gone or /proc is not there. */
export function processStatOf(pid: number | 'self'): ProcessStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 4, 5 and 14 to 17 of the file (ppid, pgrp, utime, stime, cutime, cstime) are the 2nd, 3rd and 12th to
    // 15th after the name.
    const seconds = (first: number, second: number) => (Number(fields[first]) + Number(fields[second])) / clockTicks();
    return {
      pid: pid === 'self' ? process.pid : pid,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      cpuSeconds: seconds(11, 12),
      childrenCpuSeconds: seconds(13, 14),
    };
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) the process has used so far; null when it is gone. */
export function cpuSecondsOf(pid: number): number | null {
  return processStatOf(pid)?.cpuSeconds ?? null;
}

/** Resident set size in MiB; null when the process is gone. */
export function rssMiBOf(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

export interface UsageSampler {
  /** Usage per name since the sampler started; processes that were never seen are left out. */
  stop(): Record<string, ProcessUsage>;
}

/**
 * Samples the named processes every `intervalMs` until stopped. `pids` is called at every sample
 * so a restarted process is followed (its CPU before the restart is lost, which the bench avoids).
 */
export function sampleUsage(pids: () => Record<string, number | undefined>, intervalMs = 250): UsageSampler {
  const started = performance.now();
  const first = new Map<string, { pid: number; cpu: number }>();
  const peak = new Map<string, number>();
  const sample = () => {
    for (const [name, pid] of Object.entries(pids())) {
      if (pid === undefined) continue;
      if (!first.has(name) || first.get(name)!.pid !== pid) {
        const cpu = cpuSecondsOf(pid);
        if (cpu !== null) first.set(name, { pid, cpu });
      }
      const rss = rssMiBOf(pid);
      if (rss !== null) peak.set(name, Math.max(peak.get(name) ?? 0, rss));
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const seconds = (performance.now() - started) / 1000;
      const usage: Record<string, ProcessUsage> = {};
      for (const [name, { pid, cpu }] of first) {
        const now = cpuSecondsOf(pid);
        if (now === null || seconds <= 0) continue;
        usage[name] = {
          cpuPercent: round1(((now - cpu) / seconds) * 100),
          cpuSeconds: Math.round((now - cpu) * 100) / 100,
          peakRssMiB: round1(peak.get(name) ?? 0),
        };
      }
      return usage;
    },
  };
}

const round1 = (value: number) => Math.round(value * 10) / 10;
