// `npm run build`: compiles the production code to JavaScript under dist/ (tsconfig.build.json),
// copies the browser assets the API serves from beside its modules, and writes the prebuilt
// workflow bundle (dist/workflow-bundle.js, and its traced twin dist/workflow-bundle-traced.js).
// The production image and the installed `walletflow` command run dist/; development runs the
// TypeScript sources through tsx.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { copyBrowserAssets, projectRoot } from '../lib/project-root.ts';

const dist = path.join(projectRoot, 'dist');
const run = (what: string, args: string[]) => {
  const result = spawnSync(process.execPath, args, { cwd: projectRoot, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build: ${what} failed`);
    process.exit(result.status ?? 1);
  }
};

rmSync(dist, { recursive: true, force: true });
run('tsc', [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
copyBrowserAssets(dist);
run('workflow bundle', [
  '--import',
  'tsx',
  path.join(projectRoot, 'scripts/bundle-workflows.ts'),
  path.join(dist, 'workflow-bundle.js'),
]);
console.log(`build: dist/ written (node ${path.relative(projectRoot, path.join(dist, 'api/main.js'))})`);
