// Single fundings carried by lanes (workflows/fund-lane.ts, docs/fundings.md Lanes): with
// FUNDING_LANES=always, a funding the ops API accepts joins a lane, whose run takes it through the
// batch items' chunk pass; its own workflow never starts unless the pass hands it over. A funding
// cancelled while it waits in a lane is never sent; a burst across many users is answered as every
// burst is (202, or 503 with Retry-After) and credits each user exactly what was accepted, with
// books that balance; a deploy moves a running lane to the new build. Real sandbox, PostgreSQL and
// Temporal.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import proto from '@temporalio/proto';
import { bundleWorkflows } from '../../lib/workflow-bundle.ts';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { finalFundingStatuses } from '../../domain/funding.ts';
import { LANE_COUNT, laneWorkflowId } from '../../workflows/fund-lane.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack({ fundingLanes: 'always' });
});
afterAll(async () => {
  // The lanes run until terminated: this stack's end ends them too.
  for (let lane = 0; lane < LANE_COUNT; lane += 1)
    await stack.temporal.workflow
      .getHandle(laneWorkflowId(stack.taskQueue, lane))
      .terminate('test over')
      .catch(() => undefined);
  await stack.close();
});

async function freshCode(): Promise<{ userId: string; code: string }> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00', walletLimit: '900000.00' });
  return { userId: user.userId, code: (await stack.admin.cashInCode(user.userId)).code };
}

async function postFunding(code: string, value = '2.00') {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `lanes-${randomUUID()}` },
    body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value } }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

const funding = (id: string) => stack.database.funding.findUniqueOrThrow({ where: { id } });

describe('a funding cancelled while it waits in its lane', () => {
  it('is never sent to the wallet, and the lane leaves it alone once a worker runs', async () => {
    // No worker yet: the lane's run is started by the API, and nothing takes the funding on.
    const { code } = await freshCode();
    const posted = await postFunding(code);
    expect(posted.status).toBe(202);
    const fundingId = posted.body.fundingId as string;
    const row = await funding(fundingId);
    expect(row.status).toBe('PENDING');
    expect(row.lane).not.toBeNull();
    const cancel = await stack.opsFetch(`/ops/fundings/${fundingId}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    await stack.startWorker();
    // A second funding of the same lane goes through: the lane ran past the cancelled one.
    let other: string | undefined;
    while (!other) {
      const next = await postFunding((await freshCode()).code);
      expect(next.status).toBe(202);
      if ((await funding(next.body.fundingId)).lane === row.lane) other = next.body.fundingId as string;
    }
    await waitUntil(
      () => funding(other),
      (row) => row.status === 'APPROVED',
    );
    const cancelled = await funding(fundingId);
    expect({ status: cancelled.status, errorCode: cancelled.errorCode, transferId: cancelled.transferId }).toEqual({
      status: 'FAILED',
      errorCode: 'CANCELLED',
      transferId: null,
    });
    expect(cancelled.carriedBy).toBeNull();
  });
});

describe('a funding carried by a lane', () => {
  it('reaches APPROVED through its lane, says which run carried it, and never starts a workflow of its own', async () => {
    await stack.startWorker();
    const before = await stack.apiMetrics.registry.getSingleMetricAsString('walletflow_fundings_started_total');
    const { code } = await freshCode();
    const posted = await postFunding(code);
    expect(posted.status).toBe(202);
    const fundingId = posted.body.fundingId as string;
    await waitUntil(
      () => funding(fundingId),
      (row) => row.status === 'APPROVED',
    );
    const row = await funding(fundingId);
    expect(row.carriedBy).toBe(laneWorkflowId(stack.taskQueue, row.lane!));
    const lane = await stack.temporal.workflow.getHandle(laneWorkflowId(stack.taskQueue, row.lane!)).describe();
    expect(row.carriedByRunId).toBe(lane.runId);
    await expect(stack.temporal.workflow.getHandle(row.workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
    const events = await stack.database.fundingEvent.findMany({ where: { fundingId }, orderBy: { id: 'asc' } });
    expect(events.map((event) => event.status)).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']);
    const after = await stack.apiMetrics.registry.getSingleMetricAsString('walletflow_fundings_started_total');
    const lanes = (text: string) => Number(/path="lane"} (\d+)/.exec(text)?.[1] ?? 0);
    expect(lanes(after) - lanes(before)).toBe(1);
    // The view says which run carried it.
    const view = await (await stack.opsFetch(`/ops/fundings/${fundingId}`)).json();
    expect(view.carriedBy).toEqual({ workflowId: laneWorkflowId(stack.taskQueue, row.lane!), runId: lane.runId });
  });

  // Sized by what it proves: a burst of many times a lane's chunk (the lanes' full chunks and their halves) at 64
  // requests at once, every answer specified and every credit exact; what a burst of thousands costs is the bench's
  // (`walletflow bench`, the burst) and back-pressure.test.ts's 1,000 at once. At 1,000 here, a full run beside a
  // CPU-bound process (scripts/test.sh --under-load) left fundings unfinished after 120 s.
  it('a burst of 400 across 80 users: every answer 202 or 503 with Retry-After, each user credited exactly what was accepted, books equal', async () => {
    await stack.startWorker();
    const users = await Promise.all(
      Array.from({ length: 80 }, () =>
        stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00', walletLimit: '900000.00' }),
      ),
    );
    const codes: Array<{ userId: string; code: string }> = [];
    let made = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (made < 400) {
          const user = users[made++ % users.length]!;
          codes.push({ userId: user.userId, code: (await stack.admin.cashInCode(user.userId)).code });
        }
      }),
    );
    const answers: Array<{ status: number; retryAfter: string | null; userId: string; fundingId?: string }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < codes.length) {
          const { userId, code } = codes[next++]!;
          const answer = await postFunding(code, '1.25');
          answers.push({
            status: answer.status,
            retryAfter: answer.retryAfter,
            userId,
            fundingId: answer.body.fundingId,
          });
        }
      }),
    );
    const byStatus = new Map<number, number>();
    for (const answer of answers) byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
    expect([...byStatus.keys()].every((status) => status === 202 || status === 503)).toBe(true);
    expect(answers.filter((answer) => answer.status === 503 && !answer.retryAfter)).toEqual([]);
    expect(answers.length).toBe(400);
    const accepted = answers.filter((answer) => answer.status === 202);
    expect(accepted.length).toBeGreaterThan(0);
    const ids = accepted.map((answer) => answer.fundingId!);
    await waitUntil(
      () =>
        stack.database.funding.count({
          where: { id: { in: ids }, status: { in: [...finalFundingStatuses, 'NEEDS_REVIEW'] } },
        }),
      (done) => done === ids.length,
      120_000,
      500,
    );
    const rows = await stack.database.funding.findMany({ where: { id: { in: ids } } });
    expect(rows.filter((row) => row.status !== 'APPROVED').map((row) => row.status)).toEqual([]);
    // Carried by the lanes, not by workflows of their own.
    expect(rows.filter((row) => row.carriedBy === null).length).toBe(0);
    const credited = new Map<string, number>();
    for (const answer of accepted) credited.set(answer.userId, (credited.get(answer.userId) ?? 0) + 125);
    for (const user of users) {
      const balance = (await stack.admin.user(user.userId)).balance;
      expect(Math.round(Number(balance) * 100), `user ${user.userId}`).toBe(credited.get(user.userId) ?? 0);
    }
    expect((await checkLedgerInvariants(stack.database)).violations).toEqual([]);
  }, 240_000);
});

describe('a deploy while a lane runs', () => {
  it('moves the lane to the new build: a funding carried on build A, then one carried on build B; no workflow task fails', async () => {
    await stack.startWorker();
    const carried = async () => {
      const posted = await postFunding((await freshCode()).code);
      expect(posted.status).toBe(202);
      return waitUntil(
        () => funding(posted.body.fundingId as string),
        (row) => row.status === 'APPROVED',
      );
    };
    const onA = await carried();
    const laneId = onA.carriedBy!;
    const b = await stack.createWorker({
      workflowBundle: {
        code: await bundleWorkflows({
          warnings: false,
          workflowsPath: path.resolve(import.meta.dirname, '../deploy/build-b-workflows.ts'),
        }),
      },
      promote: 'always',
    });
    try {
      // Build A's worker goes away (a deploy's old worker, drained): the lane's next task runs on B.
      await stack.stopWorker();
      // The next funding of the same lane, carried by that lane's run on build B.
      let onB = await carried();
      while (onB.lane !== onA.lane) onB = await carried();
      expect(onB.carriedBy).toBe(laneId);
      const events = (await stack.temporal.workflow.getHandle(laneId).fetchHistory()).events ?? [];
      const types = proto.temporal.api.enums.v1.EventType;
      const builds = events
        .filter((event) => Number(event.eventType) === types.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        .map((event) => event.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId);
      expect(builds.at(-1)).toBe(b.buildId);
      expect(events.filter((event) => Number(event.eventType) === types.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual([]);
    } finally {
      b.worker.shutdown();
      await b.done.catch(() => undefined);
      await b.connection.close();
      await b.wallet.close();
    }
  }, 120_000);
});
