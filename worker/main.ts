// The worker process: polls walletflow's task queue and runs its workflows and activities.
// Development bundles workflows from source; SIGINT/SIGTERM drain in-flight tasks before exit.
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import { ConfigError, loadConfig, requireResolved } from '../lib/config.ts';
import { createDatabase } from '../lib/database.ts';
import { createLogger } from '../lib/logger.ts';
import { dataConverterFor } from '../lib/payload-codec.ts';
import { createTokenCipher } from '../lib/token-cipher.ts';
import { createWalletCallLog } from '../lib/wallet-call-log.ts';
import { createWalletClient } from '../wallet/index.ts';
import { ensureReconcileSchedule } from './reconcile-schedule.ts';

let config;
try {
  config = requireResolved(loadConfig());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`walletflow worker: ${error.message}`);
    process.exit(78);
  }
  throw error;
}

const logger = createLogger({ level: config.logLevel, name: 'worker' });
const database = createDatabase(config.databaseUrl);
const wallet = createWalletClient({ ...config.wallet, ...createWalletCallLog(database, logger) });
const connection = await NativeConnection.connect({ address: config.temporal.address });
const clientConnection = await Connection.connect({ address: config.temporal.address });
const dataConverter = dataConverterFor(config.payloadKeys);
const temporal = new Client({ connection: clientConnection, namespace: config.temporal.namespace, ...(dataConverter ? { dataConverter } : {}) });
const require = createRequire(import.meta.url);
const worker = await Worker.create({
  connection,
  namespace: config.temporal.namespace,
  taskQueue: config.temporal.taskQueue,
  ...(dataConverter ? { dataConverter } : {}),
  ...(config.workflowBundlePath
    ? { workflowBundle: { codePath: config.workflowBundlePath } }
    : { workflowsPath: require.resolve('../workflows/index.ts') }),
  activities: createActivities({
    database,
    wallet,
    cipher: createTokenCipher(config.tokenEncryptionKey),
    logger,
    temporal,
    taskQueue: config.temporal.taskQueue,
  }),
});
const schedule = await ensureReconcileSchedule(temporal, {
  taskQueue: config.temporal.taskQueue,
  everyMinutes: config.reconcile.everyMinutes,
  olderThanSeconds: config.reconcile.olderThanSeconds,
});
logger.info({ schedule }, 'reconciliation schedule ready');
logger.info({ taskQueue: config.temporal.taskQueue, namespace: config.temporal.namespace }, 'worker polling');
try {
  await worker.run();
} finally {
  await connection.close();
  await clientConnection.close();
  await wallet.close();
  await database.$disconnect();
  logger.info('worker stopped');
}
process.exit(0);
