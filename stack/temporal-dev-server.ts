// The Temporal default: the Temporal CLI dev server (`temporal server start-dev`) with its SQLite
// file in a project folder, the Web UI, and walletflow's custom search attributes registered.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributes } from '../domain/search-attributes.ts';
import { findFreePort, waitForPort } from './ports.ts';
import { projectRoot } from '../lib/project-root.ts';

/**
 * Finds the Temporal CLI: TEMPORAL_CLI_PATH, then `temporal` on PATH, then the project's tool
 * cache, else builds it with Go (scripts/install-temporal-cli.sh shows progress on stderr).
 */
export function resolveTemporalCli(): string {
  const result = spawnSync('bash', [path.join(projectRoot, 'scripts/install-temporal-cli.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: process.env,
  });
  const lines = result.stdout.toString().trim().split('\n');
  const binary = lines[lines.length - 1];
  if (result.status !== 0 || !binary || !existsSync(binary)) {
    throw new Error('the Temporal CLI is not available (see the message above), and TEMPORAL_ADDRESS is not set');
  }
  return binary;
}

/**
 * Dynamic configuration walletflow runs Temporal with (the dev server's --dynamic-config-value, the
 * bench's real server, deploy/temporal/dynamicconfig.yaml for compose): eager activity dispatch,
 * off by default in the server, hands an activity scheduled by a workflow task straight back to the
 * worker that completed it, saving a matching round trip per activity (docs/benchmarks.md).
 */
export const temporalDynamicConfig = { 'system.enableActivityEagerExecution': true } as const;

export interface TemporalDevServerOptions {
  binary: string;
  /** SQLite file; absent: in memory. */
  dbFile?: string;
  port: number;
  /** Web UI port; absent: headless. */
  uiPort?: number;
  namespace: string;
  onLog?: (line: string) => void;
}

export interface RunningTemporal {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<RunningTemporal> {
  if (options.dbFile) await mkdir(path.dirname(options.dbFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
    ...Object.entries(temporalDynamicConfig).flatMap(([key, value]) => [
      '--dynamic-config-value',
      `${key}=${JSON.stringify(value)}`,
    ]),
    ...(options.uiPort ? ['--ui-port', String(options.uiPort)] : ['--headless']),
    ...Object.values(searchAttributes).flatMap((attribute) => [
      '--search-attribute',
      `${attribute.name}=${attribute.type}`,
    ]),
  ];
  const child = spawn(options.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let exited: string | undefined;
  let lastOutput = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString();
    lastOutput = (lastOutput + text).slice(-2000);
    for (const line of text.split('\n')) if (line.trim()) options.onLog?.(line);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exitedPromise = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    exited = `the Temporal dev server exited (code ${code}, signal ${signal}): ${lastOutput.trim()}`;
  });
  const address = `127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitedPromise;
      clearTimeout(timer);
    }
  };
  try {
    await waitForPort(options.port, { timeoutMs: 60_000, failed: () => exited });
    await waitForNamespace(address, options.namespace, () => exited);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    process: child,
    stop,
  };
}

/**
 * Starts the dev server on a free port, trying a fresh one when it exits before it is ready: a
 * port found free can be taken by another process before the server binds it (and the server
 * also binds ports of its own choosing), which on a busy machine happens now and then.
 */
export async function startTemporalDevServerOnFreePort(
  options: Omit<TemporalDevServerOptions, 'port'>,
  attempts = 3,
): Promise<RunningTemporal & { port: number }> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await findFreePort();
    try {
      return { ...(await startTemporalDevServer({ ...options, port })), port };
    } catch (error) {
      const exitedEarly = (error as Error).message.startsWith('the Temporal dev server exited');
      if (!exitedEarly || attempt >= attempts) throw error;
      options.onLog?.(`the Temporal dev server exited while starting on port ${port}; trying another port`);
    }
  }
}

/** The frontend listens before the namespace is ready: wait until it can be described. */
async function waitForNamespace(address: string, namespace: string, failed: () => string | undefined): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const failure = failed();
      if (failure) throw new Error(failure);
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  } finally {
    await connection.close();
  }
}
