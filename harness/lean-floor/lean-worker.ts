// The lean floor's worker process: default Worker options on its own task queue, the wallet
// client walletflow's worker uses (no audit log), and a pg pool. Started by the bench beside
// walletflow's worker, on the same Temporal, PostgreSQL and sandbox.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import pg from 'pg';
import { loadConfig, requireResolved } from '../../lib/config.ts';
import { runsCompiled } from '../../lib/project-root.ts';
import { temporalConnectionOptions } from '../../lib/temporal.ts';
import { createWalletClient } from '../../wallet/index.ts';
import { createLeanActivities, createLeanTable } from './lean-activities.ts';
import { leanTaskQueue } from './lean-contract.ts';

const config = requireResolved(loadConfig());
const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 });
await pool.query(createLeanTable);
const wallet = createWalletClient(config.wallet);
const connection = await NativeConnection.connect(
  temporalConnectionOptions(config.temporal.address, config.temporal.security),
);
const here = path.dirname(fileURLToPath(import.meta.url));
const worker = await Worker.create({
  connection,
  namespace: config.temporal.namespace,
  taskQueue: leanTaskQueue,
  workflowsPath: path.join(here, runsCompiled ? 'lean-workflow.js' : 'lean-workflow.ts'),
  activities: createLeanActivities({ wallet, pool }),
});
console.log('lean floor worker polling');
const stop = () => worker.shutdown();
process.once('SIGTERM', stop).once('SIGINT', stop);
try {
  await worker.run();
} finally {
  await connection.close();
  await wallet.close();
  await pool.end();
}
process.exit(0);
