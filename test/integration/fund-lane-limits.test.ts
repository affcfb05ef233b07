// A lane's chunks never take more fundings together than the lane's inFlight (workflows/fund-lane.ts):
// today's fundLane on the suite's Temporal, with a stand-in for its one activity that records each
// chunk's limit and when it ran, and answers as the wallet would have it (every chunk comes back full,
// the first with a 429's slow-down). What the chunks do inside is the lane tests' (funding-lanes).
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { bundleVersion, promoteOnStart, versionedWorkerOptions } from '../../lib/worker-deployment.ts';
import {
  fundLaneWorkflowType,
  type FundLaneActivities,
  type FundLaneWorkflow,
  type LaneChunkOutcome,
} from '../../workflows/fund-lane.contract.ts';
import { waitFor } from '../support/wait-for.ts';

interface Chunk {
  limit: number;
  startedAt: number;
  endedAt: number | null;
}

const chunks: Chunk[] = [];
const taskQueue = `fund-lane-limits-${randomUUID()}`;
let connection: NativeConnection;
let clientConnection: Connection;
let client: Client;
let worker: Worker;
let running: Promise<void>;

/** Each chunk takes its whole limit (it comes back full) after 300 ms; the first also says "slow down" (a 429). */
const activities: FundLaneActivities = {
  async runLaneChunk(_lane: number, limit: number): Promise<LaneChunkOutcome> {
    const chunk: Chunk = { limit, startedAt: Date.now(), endedAt: null };
    chunks.push(chunk);
    const first = chunks.length === 1;
    await new Promise((resolve) => setTimeout(resolve, 300));
    chunk.endedAt = Date.now();
    return { finished: limit, handedOver: 0, notStarted: 0, slowDownMs: first ? 50 : null, taken: limit };
  },
};

beforeAll(async () => {
  const codePath = inject('workflowBundlePath');
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  worker = await Worker.create({
    connection,
    namespace: inject('temporalNamespace'),
    taskQueue,
    workflowBundle: { codePath },
    workerDeploymentOptions: versionedWorkerOptions(bundleVersion(taskQueue, { codePath })),
    activities,
  });
  running = worker.run();
  clientConnection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection: clientConnection, namespace: inject('temporalNamespace') });
  await promoteOnStart(client, bundleVersion(taskQueue, { codePath }), 'always', createLogger({ level: 'silent' }));
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await connection?.close();
  await clientConnection?.close();
});

describe('a lane whose chunks come back full', () => {
  it('keeps the chunks under way within its inFlight once a 429 halved it: two halves of one never run at once', async () => {
    const handle = await client.workflow.start<FundLaneWorkflow>(fundLaneWorkflowType, {
      taskQueue,
      workflowId: `fund-lane-limits-${randomUUID()}`,
      args: [{ lane: 0, inFlight: 2 }],
    });
    try {
      await waitFor('five chunks', async () => (chunks.length >= 5 ? true : undefined), 30_000);
      // The first: one chunk of the lane's 2, full, with a 429: inFlight halves to 1.
      expect(chunks[0]!.limit).toBe(2);
      // Then one chunk of 1 at a time until a success gives one back (before: two chunks of ceil(1 / 2) = 1 at once).
      expect(chunks[1]!.limit).toBe(1);
      expect(chunks[2]!.startedAt).toBeGreaterThanOrEqual(chunks[1]!.endedAt ?? Number.POSITIVE_INFINITY);
      // At every chunk's start, the limits of the chunks under way add up to at most the lane's 32.
      for (const chunk of chunks) {
        const under = chunks.filter(
          (other) => other.startedAt <= chunk.startedAt && (other.endedAt ?? Infinity) > chunk.startedAt,
        );
        expect(under.reduce((sum, other) => sum + other.limit, 0)).toBeLessThanOrEqual(32);
      }
    } finally {
      await handle.terminate('test over');
    }
  });
});

describe('a worker started with WORKER_PROMOTE=never', () => {
  it('finds its build current when it already is (restarted after a promotion), and so starts the lanes', async () => {
    const logger = createLogger({ level: 'silent' });
    const version = bundleVersion(taskQueue, { codePath: inject('workflowBundlePath') });
    expect(await promoteOnStart(client, version, 'never', logger)).toBe('already-current');
    expect(await promoteOnStart(client, { ...version, buildId: 'wf-00000000000000000000' }, 'never', logger)).toBe(
      'left',
    );
  });
});
