// The workflow bundle of the code that runs, as a file made once per version of that code: for the
// stacks that start workers from a prebuilt bundle (the test suite's global setup, the soak's and
// the bench's stacks, `walletflow dev`'s worker). A webpack run costs about 3.5 CPU seconds; a suite
// ran fifteen of them, of the same code. The file's name holds the digest of the sources it was
// made of and of the lockfile that fixes the SDK bundled with them, so a file found is the bundle
// these very sources make. One of other sources is removed once it has not been used for an hour,
// as compiles are (harness/compiled-code.ts): a stack that restarts its workers for longer keeps a
// copy of its own (harness/local-stack.ts).
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { codeRoot, projectRoot, runsCompiled } from '../lib/project-root.ts';
import { bundleWorkflows } from '../lib/workflow-bundle.ts';
import { removeStale, sourcesDigest } from './compiled-code.ts';

export const workflowBundlesRoot = path.join(projectRoot, '.walletflow', 'workflow-bundles');

/**
 * The digest of the sources the running code was compiled from (written in the folder of a compile by
 * harness/compiled-code.ts); from the sources, theirs. Compiled elsewhere (`npm run build`'s dist/): unknown.
 */
function runningCodeDigest(): string | undefined {
  if (!runsCompiled) return sourcesDigest();
  const complete = path.join(codeRoot, '.complete');
  return existsSync(complete) ? readFileSync(complete, 'utf8').trim() : undefined;
}

function lockfileDigest(): string {
  const lockfile = path.join(projectRoot, 'package-lock.json');
  return existsSync(lockfile)
    ? createHash('sha256').update(readFileSync(lockfile)).digest('hex').slice(0, 12)
    : 'no-lockfile';
}

/**
 * The path of the bundle of the running code's workflows (`tracing`: with the OpenTelemetry workflow
 * interceptors), made now unless a run before made it. One bundle serves the sources and their compile
 * alike: it is made from the sources (`workflows/index.ts`), which compiled code runs only while they
 * are what it was compiled from; code compiled from other sources, or elsewhere, is bundled as it runs,
 * into a file of its own.
 */
export async function workflowBundleFile(options: { tracing?: boolean } = {}): Promise<string> {
  const tracing = options.tracing ? { tracing: true } : {};
  const compiledFrom = runningCodeDigest();
  const sources = compiledFrom === undefined ? undefined : runsCompiled ? sourcesDigest() : compiledFrom;
  if (compiledFrom === undefined || sources !== compiledFrom) {
    const file = onceFile();
    writeFileAtomically(file, await bundleWorkflows({ warnings: false, ...tracing }));
    removeStale(workflowBundlesRoot, path.basename(file));
    return file;
  }
  const name = `${sources}-${lockfileDigest()}${options.tracing ? '-traced' : ''}.js`;
  const file = path.join(workflowBundlesRoot, name);
  if (existsSync(file)) {
    try {
      // In use again: not stale for the clean-up below.
      const now = new Date();
      utimesSync(file, now, now);
      return file;
    } catch {
      // Removed as stale by another run a moment ago: made again below.
    }
  }
  const code = await bundleWorkflows({
    warnings: false,
    workflowsPath: path.join(projectRoot, 'workflows/index.ts'),
    ...tracing,
  });
  // Sources edited while webpack read them: this bundle is not surely of either version, so it is this run's alone.
  const kept = sourcesDigest() === sources ? file : onceFile();
  writeFileAtomically(kept, code);
  removeStale(workflowBundlesRoot, path.basename(kept));
  return kept;
}

/** Written beside and moved into place whole: a run reading it at the same time never sees half a bundle. */
function writeFileAtomically(file: string, code: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}-${randomUUID()}.partial`;
  writeFileSync(partial, code, { flag: 'wx', mode: 0o644, encoding: 'utf8' });
  renameSync(partial, file);
}

/** A bundle of this run alone (code whose sources are unknown, or changed while it was bundled). */
function onceFile(): string {
  return path.join(workflowBundlesRoot, `once-${process.pid}-${randomUUID()}.js`);
}
