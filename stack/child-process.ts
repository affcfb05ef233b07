// Runs a walletflow process (api, worker) as a child of `walletflow dev`: TypeScript through tsx (or
// its compiled JavaScript when the CLI itself runs compiled),
// output prefixed with its name, its own process group so the parent controls the stop order.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { entryArgs } from '../lib/project-root.ts';
import type { HeldPort } from './ports.ts';

/**
 * glibc's malloc keeps up to 8 arenas per core for a process's threads (the Temporal SDK's Rust
 * runtime, libuv's pool, the workflow thread) and holds on to what they freed: capped at 2, the
 * worker's resident memory after load fell from ~265 to ~240 MiB with no loss of throughput
 * (docs/benchmarks.md). Set for every walletflow process the stacks start, and in the Dockerfile.
 */
export const nativeMemoryEnvironment = { MALLOC_ARENA_MAX: '2' } as const;

/**
 * The V8 young generation capped (4 MiB semi-spaces, in the main thread and the workflow thread
 * alike): Node 24's V8 grows it to 128 MiB under load and keeps it, which alone put the worker at
 * ~360 MiB after the bench; at 8 MiB ~250, at 4 MiB ~215, with the same worker CPU per funding
 * (docs/benchmarks.md). Young objects in the worker and the API are short-lived (a task's
 * activation, a request, a query's rows), so the extra scavenges are cheap. Appended to NODE_OPTIONS
 * for the API and worker processes the stacks start; the image's CMD (the API) and
 * docker-compose's worker services set the same.
 */
export const serviceNodeOptions = '--max-semi-space-size=4';

/**
 * jemalloc for the API and the worker, where the machine has it (Debian's libjemalloc2;
 * scripts/setup.sh and the Dockerfile install it). glibc's malloc keeps what a burst of native
 * allocations used (the SDK's Rust core, Buffers): after a session storm the worker stayed at
 * 258–279 MiB at rest on glibc and 240–242 on jemalloc, which returns freed pages after a few
 * seconds; its CPU per funding stayed within the runs' spread (docs/benchmarks.md, Memory). The
 * API, with the semi-spaces above too, sat at 194 MiB instead of 273 before a 100,000-item batch's
 * store and peaked at 381 instead of 413 during it, 602 instead of 719 during its cancel
 * (docs/benchmarks.md, storing a batch, 2026-11-28). Without the library they run on glibc.
 * scripts/setup.sh looks in the same places with a glob.
 */
export const jemallocCandidates = [
  '/usr/local/lib/libjemalloc.so.2',
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
] as const;

export function findJemalloc(exists: (path: string) => boolean = existsSync): string | null {
  return jemallocCandidates.find((candidate) => exists(candidate)) ?? null;
}

/**
 * An API or worker process's environment: `env` with serviceNodeOptions added to its NODE_OPTIONS
 * and jemalloc preloaded when the machine has it (`jemalloc` overrides the lookup; null: glibc).
 */
export function serviceEnvironment(
  env: NodeJS.ProcessEnv,
  jemalloc: string | null = findJemalloc(),
): NodeJS.ProcessEnv {
  const preload =
    jemalloc && !(env.LD_PRELOAD ?? '').includes(jemalloc)
      ? [env.LD_PRELOAD, jemalloc].filter(Boolean).join(' ')
      : env.LD_PRELOAD;
  return {
    ...env,
    NODE_OPTIONS: [env.NODE_OPTIONS, serviceNodeOptions].filter(Boolean).join(' '),
    ...(preload ? { LD_PRELOAD: preload } : {}),
  };
}

/**
 * The API's old generation capped at 192 MiB: its live heap is small (about 55 MiB after a full
 * collection in the middle of a 100,000-item batch's store) and bounded by design (the admission
 * line, the upload budget of BATCH_UPLOAD_BUDGET_BYTES), but V8 lets garbage pile up to several
 * times that before it collects, and keeps the pages it grew to: a batch's store took the API from
 * 194 to 381 MiB, its cancel to 602. Capped, V8 collects sooner: 223 and 261 MiB, in the same time
 * (docs/benchmarks.md, storing a batch, 2026-11-28). Put before any NODE_OPTIONS of the operator's,
 * so that one of their own wins. The image's CMD (the API) sets the same.
 */
export const apiNodeOptions = '--max-old-space-size=192';

/** The API process's environment: a service's (serviceEnvironment), its old generation capped (apiNodeOptions). */
export function apiEnvironment(env: NodeJS.ProcessEnv, jemalloc: string | null = findJemalloc()): NodeJS.ProcessEnv {
  const service = serviceEnvironment(env, jemalloc);
  return { ...service, NODE_OPTIONS: [apiNodeOptions, service.NODE_OPTIONS].filter(Boolean).join(' ') };
}

/**
 * A held port's socket handed to an API process (api/main.ts, LISTEN_FD): its stdio and the
 * variable that names the descriptor. The API accepts on the socket and binds no port of its own.
 */
export function handOverSocket(held: Pick<HeldPort, 'fd'>): {
  stdio: ['ignore', 'pipe', 'pipe', number];
  env: { LISTEN_FD: string };
} {
  return { stdio: ['ignore', 'pipe', 'pipe', held.fd], env: { LISTEN_FD: '3' } };
}

export interface ManagedChild {
  name: string;
  process: ChildProcess;
  exited: Promise<number | null>;
  stop(graceMs?: number): Promise<void>;
}

export function startTsChild(name: string, entry: string, env: NodeJS.ProcessEnv, root: string): ManagedChild {
  const child = spawn(process.execPath, entryArgs(entry), {
    cwd: root,
    env: { ...nativeMemoryEnvironment, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream }).on('line', (line) => process.stdout.write(`[${name}] ${line}\n`));
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(-child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, process: child, exited, stop };
}
