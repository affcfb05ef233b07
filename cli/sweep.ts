// `walletflow sweep`: runs one sweep now (the reconcileFundings workflow, as
// the schedule does) and prints what it found and repaired. Talks to Temporal directly.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../lib/config.ts';
import { dataConverterFor } from '../lib/payload-codec.ts';
import { temporalConnectionOptions } from '../lib/temporal.ts';
import { manualSweepWorkflowId, startSweep } from '../workflows/sweep.contract.ts';

export interface SweepOptions {
  olderThan?: string;
  json?: boolean;
}

export async function runSweep(options: SweepOptions): Promise<number> {
  const config = loadConfig();
  const address = config.temporal.address ?? `127.0.0.1:${process.env.WALLETFLOW_TEMPORAL_PORT ?? 7233}`;
  const olderThanSeconds = options.olderThan === undefined ? config.sweep.olderThanSeconds : Number(options.olderThan);
  if (!Number.isInteger(olderThanSeconds) || olderThanSeconds < 0) {
    console.error('walletflow sweep: --older-than must be a whole number of seconds');
    return 64;
  }
  let connection: Connection;
  try {
    // As every process reaches a secured Temporal (TEMPORAL_TLS_*, TEMPORAL_API_KEY): never in the clear beside them.
    connection = await Connection.connect({
      ...temporalConnectionOptions(address, config.temporal.security),
      connectTimeout: 5000,
    });
  } catch {
    console.error(
      `walletflow sweep: Temporal is not reachable at ${address} (is \`npm run dev\` running, or TEMPORAL_ADDRESS set?)`,
    );
    return 3;
  }
  try {
    const dataConverter = dataConverterFor(config.payloadKeys);
    const client = new Client({
      connection,
      namespace: config.temporal.namespace,
      ...(dataConverter ? { dataConverter } : {}),
    });
    // A fresh id has one run only: its handle's result is what execute() would have returned.
    const sweep = await startSweep(client, {
      taskQueue: config.temporal.taskQueue,
      workflowId: manualSweepWorkflowId(randomUUID()),
      input: { olderThanSeconds },
    });
    const report = await sweep.result();
    if (options.json) {
      console.log(JSON.stringify(report, null, 2));
      return 0;
    }
    const counts = report.counts;
    /** "… and N more": a list holds the first MAX_SWEEP_LISTED; the worker's log has every one. */
    const more = (listed: number, count: number | undefined) => {
      if (count !== undefined && count > listed)
        console.log(`  … and ${count - listed} more (every one is in the worker's log)`);
    };
    console.log(
      `checked ${report.checked} funding(s) and payment(s) not final after ${olderThanSeconds} s; repaired ${report.repaired}`,
    );
    if (counts) {
      for (const [action, count] of Object.entries(counts.fundings)) console.log(`  fundings ${action}: ${count}`);
      for (const [action, count] of Object.entries(counts.payments)) console.log(`  payments ${action}: ${count}`);
    }
    /** Those the sweep acted on or left for ops: the ones its lists hold (not those left to their owner). */
    const actedOn = (byAction: Partial<Record<string, number>> | undefined) =>
      byAction &&
      Object.entries(byAction).reduce(
        (sum, [action, count]) => sum + (action === 'workflow-running' || action === 'owner-active' ? 0 : (count ?? 0)),
        0,
      );
    for (const item of report.items)
      console.log(`  ${item.fundingId}  ${item.status.padEnd(11)}  ${item.action.padEnd(20)}  ${item.detail}`);
    more(report.items.length, actedOn(counts?.fundings));
    for (const item of report.paymentItems ?? [])
      console.log(`  payment ${item.id}  ${item.status.padEnd(11)}  ${item.action.padEnd(20)}  ${item.detail}`);
    more(report.paymentItems?.length ?? 0, actedOn(counts?.payments));
    for (const failed of report.failedButExecuted ?? []) {
      console.log(
        `  ATTENTION: funding ${failed.fundingId} is FAILED but the wallet shows transfer ${failed.transferId} ${failed.walletStatus}: do not fund it again`,
      );
    }
    more(report.failedButExecuted?.length ?? 0, counts?.failedButExecuted);
    console.log(
      `fundings waiting for review: ${counts?.fundingsNeedingReview ?? report.fundingsNeedingReview?.length ?? 0}`,
    );
    for (const funding of report.fundingsNeedingReview ?? []) {
      console.log(
        `  ${funding.fundingId}  since ${funding.since}  ${funding.reason ?? ''}  (resolve: walletflow fundings resolve ${funding.fundingId})`,
      );
    }
    more(report.fundingsNeedingReview?.length ?? 0, counts?.fundingsNeedingReview);
    console.log(`payments waiting for review: ${counts?.paymentsNeedingReview ?? report.paymentsNeedingReview.length}`);
    for (const payment of report.paymentsNeedingReview) {
      console.log(
        `  ${payment.id}  since ${payment.since}  ${payment.reason ?? ''}  (resolve: POST /ops/payments/${payment.id}/resolve)`,
      );
    }
    more(report.paymentsNeedingReview.length, counts?.paymentsNeedingReview);
    return 0;
  } finally {
    await connection.close();
  }
}
