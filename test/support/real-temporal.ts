// A real Temporal server (harness/temporal-server.ts, built by scripts/setup.sh --temporal-server)
// on the suite's PostgreSQL server, in fresh databases of its own, for the deploy tests: stopped
// and its databases dropped by `stop`.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { dropTemporalDatabases, resolveTemporalServer, startTemporalServer } from '../../harness/temporal-server.ts';
import { testDatabaseUrl } from './test-database.ts';

export interface RealTemporal {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

export async function startRealTemporal(): Promise<RealTemporal> {
  const tools = resolveTemporalServer();
  const url = new URL(testDatabaseUrl());
  const postgres = {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
  };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'walletflow-deploy-temporal-'));
  const databasePrefix = `walletflow_deploy_temporal_${process.pid}_${Date.now().toString(36)}`;
  const server = await startTemporalServer({
    ...tools,
    dir,
    postgres,
    databasePrefix,
    historyShards: 2,
    namespace: 'default',
    // A test's few workflows at a time: small pools, few kept open (14 connections at most, where the bench's held 31).
    pools: { main: { maxConns: 10, maxIdleConns: 2 }, visibility: { maxConns: 4, maxIdleConns: 1 } },
  });
  return {
    address: server.address,
    namespace: 'default',
    stop: async () => {
      await server.stop();
      dropTemporalDatabases({ sqlTool: tools.sqlTool, postgres }, server.databases);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
