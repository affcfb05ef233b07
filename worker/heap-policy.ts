// The worker's V8 heap policy, set in the process itself so that every way of starting it (the
// stacks, the Dockerfile, compose, a plain `node dist/worker/main.js`) runs with it.
//
// V8 lets a heap grow to up to 4x what the last full collection left before it collects again. A
// burst of work (a session storm: hundreds of onboardings a second) promotes short-lived objects
// and the Buffers they hold, so the worker grew from ~50 to ~190 MiB of JavaScript heap and ~40
// MiB of Buffers between two full collections, and glibc kept much of what those had used: ~450
// MiB resident at the peak, up to ~490 at rest. Growing by at most 25% between full collections
// keeps the heap near what is live: ~290 at the peak, for ~0.5 s more of full collections over a
// bench run; the worker's CPU per funding stayed within its run-to-run spread (25–27 ms at 32 in
// flight; docs/benchmarks.md, "Memory").
//
// `--heap-growing-percent` is not one of the flags NODE_OPTIONS accepts, hence setFlagsFromString:
// V8 reads it each time it sets the next collection's limit, and the workflow thread's isolate,
// created later, shares the process's flags.
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';

/** V8 flags the worker sets on itself before it creates the Temporal worker. */
export const workerV8Flags = ['--heap-growing-percent=25'] as const;

export function applyWorkerHeapPolicy(): void {
  for (const flag of workerV8Flags) v8.setFlagsFromString(flag);
}

/** Which malloc the process runs on: jemalloc when preloaded (the stacks, compose), else glibc's. */
export function nativeAllocator(): 'jemalloc' | 'glibc' {
  try {
    return readFileSync('/proc/self/maps', 'utf8').includes('libjemalloc') ? 'jemalloc' : 'glibc';
  } catch {
    return 'glibc';
  }
}
