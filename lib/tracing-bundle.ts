// The workflow side of tracing: the module of @temporalio/interceptors-opentelemetry that a
// workflow bundle must contain for workflow spans (RunWorkflow, StartActivity), and where a worker
// with tracing on finds its prebuilt bundle. Nothing here loads OpenTelemetry. A bundle without
// the module carries no tracing code at all, so workers with tracing off run the plain bundle.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The workflow interceptor modules of a traced bundle (webpack bundles them; the worker never imports them). */
export function tracingWorkflowModules(): string[] {
  return [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];
}

/**
 * The traced twin of a prebuilt bundle, written beside it by the build: `workflow-bundle.js` →
 * `workflow-bundle-traced.js`.
 */
export function tracedBundlePath(bundlePath: string): string {
  return bundlePath.endsWith('.js') ? `${bundlePath.slice(0, -'.js'.length)}-traced.js` : `${bundlePath}-traced`;
}

/**
 * What keeps a worker from starting with tracing on: the traced twin of its prebuilt bundle missing (`npm run build`
 * writes both). Checked by the worker at start and by `walletflow config check`.
 */
export function tracedBundleProblem(config: {
  tracing: unknown;
  workflowBundlePath?: string | undefined;
}): string | null {
  if (!config.tracing || !config.workflowBundlePath) return null;
  const traced = tracedBundlePath(config.workflowBundlePath);
  return existsSync(traced)
    ? null
    : `WORKFLOW_BUNDLE_PATH: tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT) but ${traced}, the traced bundle \`npm run build\` writes beside the bundle, is missing`;
}
