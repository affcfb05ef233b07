// Test infrastructure for the whole suite: a real PostgreSQL (DATABASE_URL's server, else the
// embedded one) with a fresh database migrated for this run, and a real Temporal (TEMPORAL_ADDRESS,
// else the CLI dev server, in memory). Tests read the addresses with `inject(...)`.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../prisma/schema-engine.ts';
import { dropDatabase, ensureDatabaseExists } from '../lib/database.ts';
import { startEmbeddedPostgres, type RunningPostgres } from '../stack/embedded-postgres.ts';
import { findFreePort } from '../stack/ports.ts';
import {
  resolveTemporalCli,
  startTemporalDevServerOnFreePort,
  type RunningTemporal,
} from '../stack/temporal-dev-server.ts';
import { workflowBundleFile } from '../harness/workflow-bundle-file.ts';
import { copyDatabase } from './support/database-copy.ts';
import { compileProductionCode } from '../harness/compiled-code.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** One migrated copy per test worker (VITEST_POOL_ID), so files that run at once never share rows. */
    databaseUrls: string[];
    /** A migrated database nothing connects to: each worker's is made again from it after every file. */
    templateDatabaseName: string;
    temporalAddress: string;
    temporalNamespace: string;
    workflowBundlePath: string;
    /** The production code compiled (harness/compiled-code.ts) for the processes tests start; '' to run the sources. */
    compiledCodeDir: string;
  }
}

interface TestInfrastructure {
  values: {
    databaseUrl: string;
    databaseUrls: string[];
    templateDatabaseName: string;
    workflowBundlePath: string;
    temporalAddress: string;
    temporalNamespace: string;
    compiledCodeDir: string;
  };
  teardown: () => Promise<void>;
}

/**
 * Vitest runs a global setup once per project (vitest.config.ts has four: the suite, the unit files,
 * the lanes, and the files measured under load after them); all share one database server, one
 * Temporal and one bundle.
 */
const shared = globalThis as {
  walletflowTestInfrastructure?: Promise<TestInfrastructure>;
  walletflowTestProjects?: number;
};

export default async function setup(project: TestProject) {
  shared.walletflowTestInfrastructure ??= startInfrastructure(Math.max(1, project.vitest.config.maxWorkers));
  shared.walletflowTestProjects = (shared.walletflowTestProjects ?? 0) + 1;
  const infrastructure = await shared.walletflowTestInfrastructure;
  for (const [key, value] of Object.entries(infrastructure.values))
    project.provide(key as keyof TestInfrastructure['values'], value as never);
  return async () => {
    shared.walletflowTestProjects = (shared.walletflowTestProjects ?? 1) - 1;
    if (shared.walletflowTestProjects === 0) await infrastructure.teardown();
  };
}

async function startInfrastructure(workers: number): Promise<TestInfrastructure> {
  const root = path.resolve(import.meta.dirname, '..');
  let embedded: RunningPostgres | undefined;
  let embeddedDir: string | undefined;
  let temporal: RunningTemporal | undefined;
  const databaseName = `walletflow_test_${process.pid}_${Date.now().toString(36)}`;

  let serverUrl = process.env.DATABASE_URL;
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  const workerDatabaseNames = Array.from({ length: workers }, (_, index) => `${databaseName}_w${index + 1}`);
  const templateDatabaseName = `${databaseName}_template`;
  let workflowBundlePath = '';
  const teardown = async () => {
    await temporal?.stop();
    for (const name of [...workerDatabaseNames, templateDatabaseName, databaseName])
      if (serverUrl) await dropDatabase(serverUrl, name).catch(() => undefined);
    await embedded?.stop();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  };
  let databaseUrl = '';
  const databaseUrls: string[] = [];
  let compiledCodeDir = '';
  await mkdir(path.join(root, '.walletflow'), { recursive: true });
  // Side by side, as none needs another: the compile, the databases, Temporal and the bundle. All of them end (done or
  // failed) before a failure tears down what the others started.
  const steps = await Promise.allSettled([
    (async () => {
      // The production code compiled once, for every process a test starts (test/support/node-entry.ts).
      if (process.env.WALLETFLOW_TEST_FROM_SOURCE !== '1') compiledCodeDir = await compileProductionCode();
    })(),
    (async () => {
      if (!serverUrl) {
        // A data directory per run, so overlapping runs never share a server.
        embeddedDir = await mkdtemp(path.join(root, '.walletflow/test-postgres-'));
        embedded = await startEmbeddedPostgres({ dataDir: path.join(embeddedDir, 'data'), port: await findFreePort() });
        serverUrl = embedded.url;
      }
      const server = serverUrl;
      // The template migrated once; the others are copies of it (a migration's CPU once, not six times, while the
      // compile and the bundle run beside it). It is copied again after each file
      // (test/fresh-database-after-each-file.ts).
      await applyMigrations(await ensureDatabaseExists(server, templateDatabaseName));
      const copies = await Promise.all(
        [databaseName, ...workerDatabaseNames].map(async (name) => {
          await copyDatabase(server, templateDatabaseName, name);
          const url = new URL(server);
          url.pathname = `/${name}`;
          return url.toString();
        }),
      );
      databaseUrl = copies[0]!;
      databaseUrls.push(...copies.slice(1));
    })(),
    (async () => {
      if (!temporalAddress) {
        temporal = await startTemporalDevServerOnFreePort({ binary: resolveTemporalCli(), namespace });
        temporalAddress = temporal.address;
      }
    })(),
    // The workflows bundled once for every test worker, or found bundled from these sources by a run before
    // (webpack takes seconds).
    (async () => {
      workflowBundlePath = await workflowBundleFile();
    })(),
  ]);
  const failed = steps.find((step): step is PromiseRejectedResult => step.status === 'rejected');
  if (failed) {
    await teardown();
    throw failed.reason;
  }

  if (!temporalAddress) {
    await teardown();
    throw new Error('the global setup has no Temporal address');
  }
  return {
    values: {
      databaseUrl,
      databaseUrls,
      templateDatabaseName,
      workflowBundlePath,
      temporalAddress,
      temporalNamespace: namespace,
      compiledCodeDir,
    },
    teardown,
  };
}
