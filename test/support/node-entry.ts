// How a test starts one of walletflow's entry points in a process of its own (the API, a worker,
// the CLI): the compiled JavaScript the suite's global setup made from these sources
// (harness/compiled-code.ts), as production runs it, and about a second of CPU cheaper per process
// than the TypeScript sources through tsx. WALLETFLOW_TEST_FROM_SOURCE=1 runs them through tsx
// instead (test/global-setup.ts then compiles nothing).
import path from 'node:path';
import { inject } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** The Node.js arguments that run `entry` (a path from the project root, such as `worker/main.ts`). */
export function nodeArgsFor(entry: string): string[] {
  const compiled = inject('compiledCodeDir');
  return compiled ? [path.join(compiled, entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', path.join(root, entry)];
}
