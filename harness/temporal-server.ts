// A real Temporal server (not the dev server) on PostgreSQL, for `walletflow bench --temporal
// server`: fresh main and visibility databases set up with temporal-sql-tool from the schema files
// of the server's own module, a config with several history shards, the server started, and the
// namespace and walletflow's search attributes registered. Binaries and schema from
// scripts/install-temporal-server.sh.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { searchAttributes } from '../domain/search-attributes.ts';
import net from 'node:net';
import { waitForPort } from '../stack/ports.ts';
import { temporalDynamicConfig, type RunningTemporal } from '../stack/temporal-dev-server.ts';
import { projectRoot } from '../lib/project-root.ts';

export class TemporalServerError extends Error {
  override readonly name = 'TemporalServerError';
  constructor(
    readonly code: 'TEMPORAL_SERVER_UNAVAILABLE' | 'TEMPORAL_SCHEMA_FAILED' | 'TEMPORAL_SERVER_START_FAILED',
    message: string,
  ) {
    super(message);
  }
}

export interface TemporalServerTools {
  server: string;
  sqlTool: string;
  /** schema/postgresql/v12 of the server module: `temporal/versioned`, `visibility/versioned`. */
  schemaDir: string;
}

/**
 * The built server, SQL tool and schema (scripts/install-temporal-server.sh builds them the first time, with progress
 * on stderr).
 */
export function resolveTemporalServer(): TemporalServerTools {
  const result = spawnSync('bash', [path.join(projectRoot, 'scripts/install-temporal-server.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: process.env,
  });
  const [server, sqlTool, schemaDir] = result.stdout.toString().trim().split('\n').slice(-3);
  if (
    result.status !== 0 ||
    !server ||
    !sqlTool ||
    !schemaDir ||
    ![server, sqlTool, schemaDir].every((file) => existsSync(file))
  ) {
    throw new TemporalServerError(
      'TEMPORAL_SERVER_UNAVAILABLE',
      'the Temporal server could not be built (see the message above)',
    );
  }
  return { server, sqlTool, schemaDir };
}

export interface TemporalServerOptions extends TemporalServerTools {
  /** Where the config and logs go. */
  dir: string;
  /** PostgreSQL that holds Temporal's databases (trust or password auth). */
  postgres: { host: string; port: number; user: string; password?: string };
  /** Prefix of the two fresh databases: `<prefix>` and `<prefix>_visibility`. */
  databasePrefix: string;
  historyShards: number;
  namespace: string;
  onLog?: (line: string) => void;
  /**
   * Each of the server's connection pools, per service (frontend, history, matching, worker) and store: at most
   * `maxConns` connections, `maxIdleConns` of them kept open. Absent: 20 and 20 for the main store, 5 and 5 for
   * visibility (the bench's load: a server held 31 connections). The suite's take fewer (test/support/real-temporal.ts,
   * docs/testing.md): two of those beside the other files ran PostgreSQL out of its 100.
   */
  pools?: { main: { maxConns: number; maxIdleConns: number }; visibility: { maxConns: number; maxIdleConns: number } };
}

export interface RunningTemporalServer extends RunningTemporal {
  databases: string[];
}

/**
 * A free port below 32768: the server stores its membership ports in a PostgreSQL smallint, so
 * the kernel's ephemeral ports (32768 and up, what port 0 gives) make it exit at start.
 */
async function findFreeLowPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (taken.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
  throw new TemporalServerError('TEMPORAL_SERVER_START_FAILED', 'no free port between 20000 and 32000');
}

function runSqlTool(options: TemporalServerOptions, database: string, args: string[]): void {
  const { postgres } = options;
  const result = spawnSync(
    options.sqlTool,
    [
      '--plugin',
      'postgres12',
      '--ep',
      postgres.host,
      '-p',
      String(postgres.port),
      '-u',
      postgres.user,
      '--pw',
      postgres.password ?? '',
      '--db',
      database,
      ...args,
    ],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) {
    throw new TemporalServerError(
      'TEMPORAL_SCHEMA_FAILED',
      `temporal-sql-tool ${args[0]} on ${database} failed: ${(result.stderr || result.stdout).trim().slice(-2000)}`,
    );
  }
}

/** Drops the databases (with --force: the server may still hold connections). */
export function dropTemporalDatabases(
  options: Pick<TemporalServerOptions, 'sqlTool' | 'postgres'>,
  databases: string[],
): void {
  for (const database of databases) {
    spawnSync(
      options.sqlTool,
      [
        '--plugin',
        'postgres12',
        '--ep',
        options.postgres.host,
        '-p',
        String(options.postgres.port),
        '-u',
        options.postgres.user,
        '--pw',
        options.postgres.password ?? '',
        '--db',
        database,
        'drop-database',
        '--force',
      ],
      { encoding: 'utf8' },
    );
  }
}

function serverConfig(
  options: TemporalServerOptions,
  ports: Record<'frontend' | 'frontendHttp' | 'history' | 'matching' | 'worker', number>,
  membership: Record<string, number>,
): string {
  const { postgres } = options;
  const pools = options.pools ?? {
    main: { maxConns: 20, maxIdleConns: 20 },
    visibility: { maxConns: 5, maxIdleConns: 5 },
  };
  const store = (database: string, pool: { maxConns: number; maxIdleConns: number }) => `      sql:
        pluginName: "postgres12"
        databaseName: "${database}"
        connectAddr: "${postgres.host}:${postgres.port}"
        connectProtocol: "tcp"
        user: "${postgres.user}"
        password: "${postgres.password ?? ''}"
        maxConns: ${pool.maxConns}
        maxIdleConns: ${pool.maxIdleConns}
        maxConnLifetime: "1h"`;
  const service = (name: keyof typeof ports, extra = '') => `  ${name}:
    rpc:
      grpcPort: ${ports[name]}
      membershipPort: ${membership[name]}
      bindOnLocalHost: true${extra}`;
  return `log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${options.historyShards}
  datastores:
    postgres-default:
${store(options.databasePrefix, pools.main)}
    postgres-visibility:
${store(`${options.databasePrefix}_visibility`, pools.visibility)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"

services:
${service('frontend', `\n      httpPort: ${ports.frontendHttp}`)}
${service('matching')}
${service('history')}
${service('worker')}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${ports.frontend}"

dcRedirectionPolicy:
  policy: "noop"

dynamicConfigClient:
  filepath: "${path.join(options.dir, 'config', 'dynamicconfig.yaml')}"
  pollInterval: "10s"
`;
}

/**
 * Ids up to 255 characters, as the dev server allows (walletflow's workflow ids are far shorter),
 * and the settings walletflow runs every Temporal with (eager activity dispatch).
 */
const dynamicConfig = `limit.maxIDLength:
  - value: 255
    constraints: {}
${Object.entries(temporalDynamicConfig)
  .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n    constraints: {}\n`)
  .join('')}`;

export async function startTemporalServer(options: TemporalServerOptions): Promise<RunningTemporalServer> {
  const databases = [options.databasePrefix, `${options.databasePrefix}_visibility`];
  const schemas = [
    path.join(options.schemaDir, 'temporal', 'versioned'),
    path.join(options.schemaDir, 'visibility', 'versioned'),
  ];
  for (const [index, database] of databases.entries()) {
    runSqlTool(options, database, ['create-database']);
    runSqlTool(options, database, ['setup-schema', '-v', '0.0']);
    runSqlTool(options, database, ['update-schema', '-d', schemas[index]!]);
  }

  const configDir = path.join(options.dir, 'config');
  await mkdir(configDir, { recursive: true });
  const ports = { frontend: 0, frontendHttp: 0, history: 0, matching: 0, worker: 0 };
  const membership: Record<string, number> = {};
  const taken = new Set<number>();
  for (const name of Object.keys(ports) as Array<keyof typeof ports>) {
    ports[name] = await findFreeLowPort(taken);
    membership[name] = await findFreeLowPort(taken);
  }
  await writeFile(path.join(configDir, 'development.yaml'), serverConfig(options, ports, membership));
  await writeFile(path.join(configDir, 'dynamicconfig.yaml'), dynamicConfig);

  const child: ChildProcess = spawn(
    options.server,
    ['--root', options.dir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let exited: string | undefined;
  let lastOutput = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString();
    lastOutput = (lastOutput + text).slice(-3000);
    for (const line of text.split('\n')) if (line.trim()) options.onLog?.(line);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exitedPromise = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    exited = `the Temporal server exited (code ${code}, signal ${signal}): ${lastOutput.trim()}`;
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exitedPromise;
      clearTimeout(timer);
    }
  };
  const address = `127.0.0.1:${ports.frontend}`;
  try {
    await waitForPort(ports.frontend, { timeoutMs: 90_000, failed: () => exited });
    await registerNamespace(address, options.namespace, () => exited);
  } catch (error) {
    await stop();
    const detail = `${(error as Error).message}; its last output: ${lastOutput.trim().slice(-1500)}`;
    throw new TemporalServerError(
      error instanceof TemporalServerError ? error.code : 'TEMPORAL_SERVER_START_FAILED',
      detail,
    );
  }
  return { address, uiUrl: undefined, process: child, stop, databases };
}

const keyword = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

/**
 * Registers the namespace and walletflow's search attributes, then waits until a workflow start
 * that carries them is accepted (the frontend's namespace cache refreshes every few seconds).
 */
async function registerNamespace(address: string, namespace: string, failed: () => string | undefined): Promise<void> {
  const retry = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const failure = failed();
      if (failure) throw new TemporalServerError('TEMPORAL_SERVER_START_FAILED', failure);
      try {
        return await call();
      } catch (error) {
        if (Date.now() > deadline)
          throw new TemporalServerError('TEMPORAL_SERVER_START_FAILED', `${what}: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
  // The frontend's port opens before its gRPC service answers.
  const connection = await retry('connect to the frontend', () =>
    Connection.connect({ address, connectTimeout: '5 seconds' }),
  );
  try {
    await retry('register the namespace', async () => {
      try {
        await connection.workflowService.registerNamespace({
          namespace,
          workflowExecutionRetentionPeriod: proto.google.protobuf.Duration.fromObject({ seconds: 86_400 }),
        });
      } catch (error) {
        // Already there (an earlier attempt went through).
        if (!/already exists|AlreadyExists/i.test((error as Error).message)) throw error;
      }
    });
    await retry('describe the namespace', () => connection.workflowService.describeNamespace({ namespace }));
    await retry('add the search attributes', () =>
      connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(
          Object.values(searchAttributes).map((attribute) => [attribute.name, keyword]),
        ),
      }),
    );
    await retry('a start with the search attributes', async () => {
      const { Client } = await import('@temporalio/client');
      const client = new Client({ connection, namespace });
      // No worker runs this type: the start only proves the server takes the search attributes.
      const probeWorkflowType = 'walletflowProbe';
      const handle = await client.workflow.start(probeWorkflowType, {
        taskQueue: 'walletflow-probe',
        workflowId: `probe-${Date.now()}`,
        searchAttributes: Object.fromEntries(
          Object.values(searchAttributes).map((attribute) => [attribute.name, ['PROBE']]),
        ),
      });
      await handle.terminate('probe');
    });
  } finally {
    await connection.close();
  }
}
