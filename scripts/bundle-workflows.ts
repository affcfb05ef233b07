// Bundles workflows/ for production workers (Temporal's webpack bundle), so a worker starts
// without bundling: `WORKFLOW_BUNDLE_PATH=dist/workflow-bundle.js`. Used by the Dockerfile. Its
// traced twin (`workflow-bundle-traced.js`, with OpenTelemetry's workflow interceptors) is written
// beside it: a worker with tracing on runs that one, so the plain bundle carries no tracing code.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { tracedBundlePath, tracingWorkflowModules } from '../lib/tracing-bundle.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const output = path.resolve(process.argv[2] ?? path.join(root, 'dist/workflow-bundle.js'));
const workflowsPath = path.join(root, 'workflows/index.ts');
await mkdir(path.dirname(output), { recursive: true });
for (const [file, workflowInterceptorModules] of [
  [output, []],
  [tracedBundlePath(output), tracingWorkflowModules()],
] as const) {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [...workflowInterceptorModules],
  });
  await writeFile(file, code);
  console.log(
    `workflow bundle written to ${path.relative(process.cwd(), file)} (${Math.round(code.length / 1024)} KiB)`,
  );
}
