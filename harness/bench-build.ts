// The bench runs the API and the workers as production runs them: compiled JavaScript, not the
// TypeScript sources through tsx (whose loader costs each process ~35 MiB and some CPU). It
// compiles the production code (tsconfig.build.json) into .walletflow/bench-build/<digest>/ inside
// the project, so the compiled files resolve the project's node_modules, without touching dist/ (the
// `walletflow` command prefers dist/ when it exists: a stale one would run old code). The digest is
// of the sources: a bench run on unchanged sources reuses the last compile (the bench tests of one
// test run, each a bench of its own, compile once), and benches started at once build it once
// between them (each compiles into a folder of its own and moves it into place whole).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { copyBrowserAssets, projectRoot } from '../lib/project-root.ts';

export const benchBuildRoot = path.join(projectRoot, '.walletflow', 'bench-build');

/** Folders that are not production code (tsconfig.build.json's exclude, and what holds no source). */
const notSources = new Set([
  'node_modules',
  '.walletflow',
  'dist',
  'test',
  'bench',
  'scripts',
  'docs',
  'deploy',
  'test-results',
  '.git',
]);

/** A digest of everything a compile reads: the TypeScript sources, the browser assets, the compiler's settings. */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  const visit = (relative: string) => {
    for (const entry of readdirSync(path.join(projectRoot, relative), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const child = relative ? path.join(relative, entry.name) : entry.name;
      if (entry.isDirectory()) {
        if (!notSources.has(child)) visit(child);
      } else if (
        /\.(ts|js|css|svg|png|json)$/.test(entry.name) &&
        (relative !== '' || /^tsconfig.*\.json$|^package\.json$/.test(entry.name))
      ) {
        hash
          .update(child)
          .update('\0')
          .update(readFileSync(path.join(projectRoot, child)))
          .update('\0');
      }
    }
  };
  visit('');
  return hash.digest('hex').slice(0, 16);
}

/**
 * Compiles the production code, or finds it compiled from these very sources; answers its folder. Throws with tsc's
 * output when it fails.
 */
export function buildForBench(): string {
  const digest = sourcesDigest();
  const dir = path.join(benchBuildRoot, digest);
  if (existsSync(path.join(dir, '.complete'))) return dir;
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', building], {
    cwd: projectRoot,
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    rmSync(building, { recursive: true, force: true });
    throw new Error(`compiling for the bench failed:\n${result.stdout}${result.stderr}`);
  }
  copyBrowserAssets(building);
  writeFileSync(path.join(building, '.complete'), digest);
  try {
    renameSync(building, dir);
  } catch {
    // Another bench moved its compile of the same sources into place first: use that one.
    rmSync(building, { recursive: true, force: true });
  }
  // Older compiles are of sources that changed since.
  for (const entry of readdirSync(benchBuildRoot)) {
    if (entry !== digest && !entry.includes('.building-'))
      rmSync(path.join(benchBuildRoot, entry), { recursive: true, force: true });
  }
  return dir;
}
