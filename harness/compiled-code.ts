// The production code compiled to JavaScript, for the processes the bench and the test suite start:
// the API, the workers and the CLI run as production runs them, not from the TypeScript sources
// through tsx (whose loader costs each process ~35 MiB and about a second of CPU). It compiles
// the production code (tsconfig.build.json) into .walletflow/compiled/<digest>/ inside the project,
// so the compiled files resolve the project's node_modules, without touching dist/ (the `walletflow`
// command prefers dist/ when it exists: a stale one would run old code). The digest is of the
// sources: a run on unchanged sources reuses the last compile (the suite's global setup compiles
// once, and the bench inside it finds that compile), and compiles started at once build it once
// between them (each compiles into a folder of its own and moves it into place whole).
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { copyBrowserAssets, projectRoot } from '../lib/project-root.ts';

export const compiledCodeRoot = path.join(projectRoot, '.walletflow', 'compiled');

/** A compile of other sources is removed once it is this old: a run still using it has ended by then. */
const staleAfterMs = 60 * 60 * 1000;

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
export function sourcesDigest(): string {
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

/** Runs tsc to its end: its exit code and output. */
function runTsc(args: string[]): Promise<{ status: number | null; output: string }> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const child = spawn(process.execPath, [tsc, ...args], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, output }));
  });
}

/**
 * Compiles the production code, or finds it compiled from these very sources; answers its folder. Throws with tsc's
 * output when it fails. The compile runs in a process of its own, so the caller's other work goes on beside it.
 */
export async function compileProductionCode(): Promise<string> {
  const digest = sourcesDigest();
  const dir = path.join(compiledCodeRoot, digest);
  if (existsSync(path.join(dir, '.complete'))) {
    try {
      // In use again: a compile of other sources does not take it for stale (below).
      const now = new Date();
      utimesSync(dir, now, now);
      return dir;
    } catch {
      // Removed as stale by another run a moment ago: compile it again below.
    }
  }
  const building = `${dir}.building-${process.pid}-${randomUUID()}`;
  rmSync(building, { recursive: true, force: true });
  // --noCheck: the same JavaScript (isolatedModules and verbatimModuleSyntax make the emit independent
  // of types) without checking the types again, which is most of tsc's time; `tsc -p tsconfig.json`
  // (scripts/test.sh, CI) and `npm run build` check them.
  const result = await runTsc(['-p', 'tsconfig.build.json', '--noCheck', '--outDir', building]);
  if (result.status !== 0) {
    rmSync(building, { recursive: true, force: true });
    throw new Error(`compiling the production code failed:\n${result.output}`);
  }
  copyBrowserAssets(building);
  writeFileSync(path.join(building, '.complete'), digest);
  try {
    renameSync(building, dir);
  } catch (error) {
    // Another run moved its compile of the same sources into place first: use that one.
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(path.join(dir, '.complete'))) throw error;
  }
  // Older compiles are of sources that changed since, and folders left by a compile that was killed;
  // one made or used within the hour may still be in use (a test run started before an edit), so it
  // stays until a later compile finds it stale.
  removeStale(compiledCodeRoot, digest);
  // The folder this compile had before it served the tests as well as the bench.
  rmSync(path.join(projectRoot, '.walletflow', 'bench-build'), { recursive: true, force: true });
  return dir;
}

/**
 * Removes what `root` holds (compiles, bundles) untouched for staleAfterMs, except `keep`: one made or used within the
 * hour may still be in use by a run started before the sources changed.
 */
export function removeStale(root: string, keep: string): void {
  for (const entry of readdirSync(root)) {
    const entryPath = path.join(root, entry);
    const modified = statSync(entryPath, { throwIfNoEntry: false })?.mtimeMs;
    if (entry !== keep && modified !== undefined && Date.now() - modified > staleAfterMs)
      rmSync(entryPath, { recursive: true, force: true });
  }
}
