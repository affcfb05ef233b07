// The bench runs the API and the workers as production runs them: compiled JavaScript, not the
// TypeScript sources through tsx (whose loader costs each process ~35 MiB and some CPU). It
// compiles the production code (tsconfig.build.json) into .walletflow/bench-build/ inside the
// project, so the compiled files resolve the project's node_modules, without touching dist/ (the
// `walletflow` command prefers dist/ when it exists: a stale one would run old code).
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { copyBrowserAssets, projectRoot } from '../lib/project-root.ts';

export const benchBuildDir = path.join(projectRoot, '.walletflow', 'bench-build');

/** Compiles the production code into benchBuildDir; throws with tsc's output when it fails. */
export function buildForBench(): string {
  rmSync(benchBuildDir, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', benchBuildDir], { cwd: projectRoot, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`compiling for the bench failed:\n${result.stdout}${result.stderr}`);
  copyBrowserAssets(benchBuildDir);
  return benchBuildDir;
}
