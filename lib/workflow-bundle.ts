// walletflow's workflows as one Temporal (webpack) bundle, built in-process: by a worker that runs
// from source (development), and by the stacks that start many workers from one bundle (the test
// suite's global setup, the history capture's stack, the soak and bench stack). webpack's progress
// lines are dropped; its errors are printed. (scripts/bundle-workflows.ts builds the production
// bundle, with all its output.) A bundle's build id, the worker deployment version its workers
// register (docs/changing-workflows.md), is derived from its code: two different bundles never
// share one.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runsCompiled } from './project-root.ts';
import { tracingWorkflowModules } from './tracing-bundle.ts';

// Compiled (dist/), the workflows are JavaScript beside this file's own.
const workflowsPath = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  runsCompiled ? '../workflows/index.js' : '../workflows/index.ts',
);

const ignore = () => {};

/**
 * The bundle's code; `warnings: false` drops webpack's warnings too (default: printed); `tracing`:
 * with the OpenTelemetry workflow interceptors (the bundle a worker with tracing on runs).
 */
export async function bundleWorkflows(
  options: { warnings?: boolean; tracing?: boolean; workflowsPath?: string } = {},
): Promise<string> {
  // Loaded here: the worker package is large, and only these stacks bundle.
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const logger = {
    trace: ignore,
    debug: ignore,
    info: ignore,
    warn: options.warnings === false ? ignore : (message: string) => console.warn(message),
    error: (message: string) => console.error(message),
    log: ignore,
  };
  const { code } = await bundleWorkflowCode({
    workflowsPath: options.workflowsPath ?? workflowsPath,
    logger,
    ...(options.tracing ? { workflowInterceptorModules: tracingWorkflowModules() } : {}),
  });
  return code;
}

/** The build id of a bundle's code: `wf-` and the start of its SHA-256 (a different bundle, a different id). */
export function buildIdOf(code: string | Buffer): string {
  return `wf-${createHash('sha256').update(code).digest('hex').slice(0, 20)}`;
}
