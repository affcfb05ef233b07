// A batch chunk whose worker froze (SIGSTOP) past its heartbeat time-out (workflows/fund-batch.ts,
// activities/batch.ts), on the real stack: Temporal, PostgreSQL and the sandbox wallet, with a worker
// process of its own cut off from Temporal as it resumes. The replaced attempt sends the wallet nothing.
// The other owner cases (a dead worker, the sweep beside a chunk) are batch-chunk-owners.test.ts's; this
// one waits out a heartbeat time-out and a frozen worker's wait, so it runs in a file of its own beside them.
import { describe, expect, inject, it } from 'vitest';
import { sleep, useBatchRunnerStack } from '../support/batch-runner-kit.ts';
import { waitFor } from '../support/wait-for.ts';
import { startWorkerProcess } from '../support/worker-process.ts';
import { startHttpRecorder, startTcpLink } from '../support/process-links.ts';

const { stack, runningBatch, startRunner, resultOf, itemsOf } = useBatchRunnerStack();

describe('a chunk whose worker froze', () => {
  it('stops once resumed after another attempt was due: the wallet receives no call from the replaced attempt', async () => {
    await stack().stopWorker();
    // The frozen worker's wallet calls pass through a recorder, and its Temporal connection through a link the test can
    // cut.
    const walletRecorder = await startHttpRecorder(new URL(stack().sandbox.url).origin);
    const temporalLink = await startTcpLink(inject('temporalAddress'));
    const env = stack().workerEnv();
    const viaRecorder = (url: string | undefined) => `${walletRecorder.origin}${new URL(url!).pathname}`;
    // Its wallet calls may take up to 18 s (the longest WALLET_TIMEOUT_MS there is): none of them times out while it is
    // frozen.
    const child = startWorkerProcess({
      ...env,
      LOG_LEVEL: 'info',
      WALLET_TIMEOUT_MS: '18000',
      TEMPORAL_ADDRESS: temporalLink.address,
      TRANSFER_URL: viaRecorder(env.TRANSFER_URL),
      CONNECT_URL: viaRecorder(env.CONNECT_URL),
      OP_URL: viaRecorder(env.OP_URL),
    });
    try {
      await child.polling();
      // Its creates take 12 s: the worker is frozen while the chunk waits on them, and their
      // answers come as it resumes (from here on, a replaced chunk would store and execute them).
      await stack().admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 12_000 }]);
      const batchId = await runningBatch(3);
      const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
      // Frozen once the wallet has every create (a request still on its way out of the process when
      // it stops arrives when it resumes: it was sent while the attempt was current).
      const creates = () =>
        walletRecorder.calls().filter((call) => call.method === 'POST' && call.path === '/v1/transfers').length;
      await waitFor(
        'the chunk’s three creates at the wallet',
        () => (creates() === 3 ? true : undefined),
        60_000,
        () => JSON.stringify(walletRecorder.calls()),
      );
      child.freeze();
      // Frozen past the heartbeat time-out: Temporal gives the chunk to another attempt.
      await waitFor(
        'the chunk’s next attempt due',
        async () =>
          ((await handle.describe()).raw.pendingActivities ?? []).some((activity) => (activity.attempt ?? 1) > 1) ||
          undefined,
        60_000,
      );
      await stack().admin.clearFaults();
      // Cut off from Temporal, the frozen process can only go on with what it was doing: the replaced attempt.
      await temporalLink.sever();
      const resumedAt = Date.now();
      child.resume();
      await sleep(8000);
      expect(walletRecorder.calls().filter((call) => call.at >= resumedAt)).toEqual([]);

      // Another worker takes the chunk over; each item ends once, by its one owner at a time.
      await stack().startWorker();
      expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
      expect(walletRecorder.calls().filter((call) => call.at >= resumedAt)).toEqual([]);
      const rows = await itemsOf(batchId);
      const wallet = new Map(
        (await stack().admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]),
      );
      for (const row of rows) {
        expect(row.status).toBe('APPROVED');
        expect(wallet.get(row.transferId!)?.executions).toBe(1);
        // What the replaced attempt created is kept on record, never executed.
        for (const abandoned of row.abandonedTransferIds) expect(wallet.get(abandoned)?.executions ?? 0).toBe(0);
      }
    } finally {
      await child.stop('SIGKILL');
      await walletRecorder.close();
      // Severed half-way on success; on an earlier failure it would outlive the file (files share their process).
      await temporalLink.sever();
    }
  }, 240_000);
});
