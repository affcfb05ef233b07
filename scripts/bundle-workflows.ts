// Bundles workflows/ for production workers (Temporal's webpack bundle), so a worker starts
// without bundling: `WORKFLOW_BUNDLE_PATH=dist/workflow-bundle.js`. Used by the Dockerfile.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const output = path.resolve(process.argv[2] ?? path.join(root, 'dist/workflow-bundle.js'));
const { code } = await bundleWorkflowCode({ workflowsPath: path.join(root, 'workflows/index.ts') });
await mkdir(path.dirname(output), { recursive: true });
await writeFile(output, code);
console.log(`workflow bundle written to ${path.relative(process.cwd(), output)} (${Math.round(code.length / 1024)} KiB)`);
