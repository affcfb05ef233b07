// walletflow's workflows as one Temporal (webpack) bundle, built in-process for the stacks that
// start many workers from it: the test suite's global setup, the history capture's stack, and the
// soak and bench stack. webpack's progress lines are dropped; its errors are printed.
// (scripts/bundle-workflows.ts builds the production bundle, with all its output.)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runsCompiled } from '../lib/project-root.ts';
import { tracingWorkflowModules } from '../lib/tracing-bundle.ts';

// Compiled (dist/), the workflows are JavaScript beside this file's own.
const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), runsCompiled ? '../workflows/index.js' : '../workflows/index.ts');

const ignore = () => {};

/**
 * The bundle's code; `warnings: false` drops webpack's warnings too (default: printed); `tracing`:
 * with the OpenTelemetry workflow interceptors (the bundle a worker with tracing on runs).
 */
export async function bundleWorkflows(options: { warnings?: boolean; tracing?: boolean } = {}): Promise<string> {
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
  const { code } = await bundleWorkflowCode({ workflowsPath, logger, ...(options.tracing ? { workflowInterceptorModules: tracingWorkflowModules() } : {}) });
  return code;
}
