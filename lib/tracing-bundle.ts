// The workflow side of tracing: the module of @temporalio/interceptors-opentelemetry that a
// workflow bundle must contain for workflow spans (RunWorkflow, StartActivity), and where a worker
// with tracing on finds its prebuilt bundle. Nothing here loads OpenTelemetry. A bundle without
// the module carries no tracing code at all, so workers with tracing off run the plain bundle.
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
