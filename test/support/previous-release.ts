// The previous release as its operators run it: the tree of its commit (git archive of this
// checkout's history) in a folder of its own, with this checkout's node_modules (its dependencies
// are a subset of today's, at the same versions: checked) and its own Prisma client generated from
// its own schema. For the upgrade test (test/deploy/upgrade-from-previous-release.test.ts), which
// runs its migrations, its API and its unversioned worker, then deploys today's build over them.
// Its worker runs its own workflows from a prebuilt bundle (WORKFLOW_BUNDLE_PATH, as its Dockerfile
// ran it), the webpack bundle of its workflows/ that its worker would otherwise make at every
// start: made once per release commit and lockfile (the bundle holds the workflow SDK of this
// checkout's node_modules) and kept in the project's tool cache (~/.cache/walletflow, or
// $WALLETFLOW_TOOLS_DIR), which fresh clones share.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflows } from '../../lib/workflow-bundle.ts';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * The last release before Worker Versioning (its workers unversioned), whose open runs today's
 * build must finish; its histories are test/replay/histories/archive/release-360981c.
 */
export const previousReleaseCommit = '360981cc3987e1cc4437b742d14d5781da8821fe';

export interface PreviousRelease {
  /** The release's tree: run its entry points with this as the working directory. */
  dir: string;
  /** The bundle of the release's own workflows, for its worker's WORKFLOW_BUNDLE_PATH. */
  workflowBundlePath: string;
  /**
   * Applies the release's own migrations to `databaseUrl` (its `walletflow migrate`): done once it has printed what it
   * applied. Its process then lingered 10 s on a timer its schema engine left behind (fixed since:
   * prisma/schema-engine.ts), so it is stopped there rather than waited for.
   */
  migrate(databaseUrl: string): Promise<void>;
  remove(): Promise<void>;
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; input?: Buffer },
): Buffer {
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    input: options.input,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${options.cwd}) failed: ${result.error?.message ?? ''}${result.stderr?.toString().slice(-2000) ?? ''}`,
    );
  }
  return result.stdout;
}

export async function checkOutPreviousRelease(commit = previousReleaseCommit): Promise<PreviousRelease> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `walletflow-release-${commit.slice(0, 7)}-`));
  try {
    let archive: Buffer;
    try {
      archive = run('git', ['archive', '--format=tar', commit], { cwd: root });
    } catch (error) {
      throw new Error(
        `the previous release ${commit} is not in this checkout's history (a shallow clone?): ${(error as Error).message}`,
        { cause: error },
      );
    }
    run('tar', ['-x', '-C', dir], { cwd: dir, input: archive });
    await assertDependenciesPresent(dir);
    await symlink(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    // Its own client, from its own schema, into its own generated/ (scripts/prisma-generate.ts, offline).
    run(process.execPath, ['--import', 'tsx', 'scripts/prisma-generate.ts'], { cwd: dir });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  let workflowBundlePath: string;
  try {
    workflowBundlePath = await releaseWorkflowBundle(commit, dir);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    workflowBundlePath,
    migrate(databaseUrl) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'migrate'], {
        cwd: dir,
        env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      return new Promise((resolve, reject) => {
        const onOutput = (chunk: Buffer) => {
          output += chunk.toString();
          if (/^(migrations applied: |migrations: up to date)/m.test(output)) {
            child.kill('SIGTERM');
            resolve();
          }
        };
        child.stdout.on('data', onOutput);
        child.stderr.on('data', onOutput);
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`the release's migrate exited ${code}: ${output.slice(-2000)}`)),
        );
      });
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The webpack bundle of the release's workflows/index.ts, as its worker made it at start (the same
 * bundler and options: no interceptor modules without tracing): from the cache when this commit was
 * bundled with this lockfile's packages, else made from the checked-out tree and stored (written
 * beside its place, then renamed, so a run that stops half-way leaves no partial bundle).
 */
async function releaseWorkflowBundle(commit: string, dir: string): Promise<string> {
  const lockfile = await readFile(path.join(root, 'package-lock.json'));
  const key = createHash('sha256').update(commit).update(lockfile).digest('hex').slice(0, 16);
  const toolsDir = process.env.WALLETFLOW_TOOLS_DIR || path.join(os.homedir(), '.cache/walletflow');
  const cached = path.join(toolsDir, 'previous-release', `${commit.slice(0, 7)}-${key}`, 'workflow-bundle.js');
  if (existsSync(cached)) return cached;
  const code = await bundleWorkflows({ warnings: false, workflowsPath: path.join(dir, 'workflows/index.ts') });
  await mkdir(path.dirname(cached), { recursive: true });
  const partial = `${cached}.${randomUUID()}.partial`;
  await writeFile(partial, code);
  await rename(partial, cached);
  return cached;
}

/** Today's node_modules serve the release only if it asks for nothing today's lockfile lacks. */
async function assertDependenciesPresent(dir: string): Promise<void> {
  const read = async (file: string) =>
    JSON.parse(await readFile(file, 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
  const theirs = await read(path.join(dir, 'package.json'));
  const ours = await read(path.join(root, 'package.json'));
  const wanted = { ...theirs.dependencies, ...theirs.devDependencies };
  const have = { ...ours.dependencies, ...ours.devDependencies };
  const differing = Object.entries(wanted).filter(([name, range]) => have[name] !== range);
  if (differing.length > 0) {
    throw new Error(
      `the previous release needs dependencies this checkout does not install as it asks: ${differing.map(([name, range]) => `${name}@${range} (here ${have[name] ?? 'absent'})`).join(', ')}`,
    );
  }
}
