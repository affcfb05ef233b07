// Safe deploys (docs/changing-workflows.md): two builds of walletflow's workflows run side by side as
// versions of one worker deployment. Build B's fundWallet differs from build A's from its first
// command (a timer), with no patch. A funding that started on A finishes on A after B becomes
// current; new fundings run on B; `walletflow deploy rollback` sends new fundings back to A in one
// step; no workflow task ever fails (a pinned run is never replayed on the other build). On the real
// sandbox and PostgreSQL, with the CLI an operator runs. Each case runs on the Temporal its users run
// it on: the production procedure (ramp, promote, rollback) on a real Temporal server on PostgreSQL
// (worker-deployment-real-server.test.ts; built by scripts/setup.sh --temporal-server), a restarted
// `walletflow dev` (WORKER_PROMOTE=replace, refused in production) on the suite's dev server
// (worker-deployment.test.ts). Both are the same server build (v1.29.1, the one the Temporal CLI
// v1.5.1 embeds), so a case run on both proved nothing more (docs/testing.md). One file per Temporal,
// so the two run side by side.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { RealTemporal } from '../support/real-temporal.ts';
import proto from '@temporalio/proto';
import { bundleWorkflows } from '../../lib/workflow-bundle.ts';
import { promoteOnStart } from '../../lib/worker-deployment.ts';
import { createLogger } from '../../lib/logger.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import type { InProcessWorker } from '../support/partner-api.ts';
import { runCli } from '../support/cli-run.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The cases: `promote-and-rollback`, the production procedure with money in flight; `dev-stack-restart`, a restarted
 * dev stack taking over the runs of the build before it; `unregistered-build`, the CLI's refusals of a build no
 * worker has registered.
 */
export type DeployCase =
  'promote-and-rollback' | 'ramps-hold-back-a-new-build' | 'dev-stack-restart' | 'unregistered-build';

/** The deploy `cases` on one Temporal: `start` brings it (undefined: the suite's dev server). */
export function describeWorkerDeployment(
  name: string,
  start: () => Promise<RealTemporal | undefined>,
  cases: readonly DeployCase[],
): void {
  /** A case's test, registered only in the file that runs it. */
  const theCase = (which: DeployCase, title: string, body: () => Promise<void>, timeoutMs: number) => {
    if (cases.includes(which)) it(title, body, timeoutMs);
  };
  describe(`two builds of the workflows, deployed while money is in flight, on ${name}`, () => {
    let stack: PartnerStack;
    let stopTemporal: (() => Promise<void>) | undefined;
    const workers: Array<InProcessWorker & { buildId: string }> = [];

    beforeAll(async () => {
      const temporal = await start();
      stopTemporal = temporal?.stop;
      stack = await startPartnerStack(temporal ? { temporal } : {});
    }, 300_000);
    /** Stops a worker as its process would stop: drained, its connections closed. */
    const stopWorker = async (running: InProcessWorker) => {
      running.worker.shutdown();
      await running.done.catch(() => undefined);
      await running.connection.close();
      await running.wallet.close();
    };
    afterAll(async () => {
      await stack?.admin.settings({ processingDelayMs: 0 }).catch(() => undefined);
      for (const running of workers) await stopWorker(running);
      await stack?.close();
      await stopTemporal?.();
    }, 120_000);

    const deployCli = (...args: string[]) =>
      runCli(['deploy', ...args], {
        env: {
          TEMPORAL_ADDRESS: stack.temporalAddress,
          TEMPORAL_NAMESPACE: stack.temporalNamespace,
          TEMPORAL_TASK_QUEUE: stack.taskQueue,
          LOG_LEVEL: 'warn',
        },
      });

    /** A funding to a fresh cash-in code, as the ops API takes it: its id and its workflow's id. */
    async function startFunding(): Promise<{ fundingId: string; workflowId: string }> {
      const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
      const { code } = await stack.admin.cashInCode(user.userId);
      const response = await stack.opsFetch('/ops/fundings', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '1.00' } }),
      });
      expect(response.status).toBe(202);
      const { fundingId } = (await response.json()) as { fundingId: string };
      const { workflowId } = await stack.database.funding.findUniqueOrThrow({
        where: { id: fundingId },
        select: { workflowId: true },
      });
      return { fundingId, workflowId };
    }

    type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
    const types = proto.temporal.api.enums.v1.EventType;
    const EventType = {
      WorkflowTaskCompleted: types.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      WorkflowTaskFailed: types.EVENT_TYPE_WORKFLOW_TASK_FAILED,
      TimerStarted: types.EVENT_TYPE_TIMER_STARTED,
      ActivityTaskScheduled: types.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
      MarkerRecorded: types.EVENT_TYPE_MARKER_RECORDED,
    };

    async function historyOf(workflowId: string): Promise<HistoryEvent[]> {
      const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
      return history.events ?? [];
    }

    /**
     * The history of a run once it has closed: the funding's row is final a moment before (the one
     * pass writes it inside the workflow task the run completes in), and a busy machine stretches it.
     */
    async function closedHistoryOf(workflowId: string): Promise<HistoryEvent[]> {
      await stack.temporal.workflow.getHandle(workflowId).result();
      return historyOf(workflowId);
    }

    /** Once the funding's run has scheduled an activity: under way on the build it started on. */
    const underWay = (name: string, funding: { workflowId: string }) =>
      waitFor(
        `${name} under way`,
        async () =>
          (await historyOf(funding.workflowId)).some(
            (event) => Number(event.eventType) === EventType.ActivityTaskScheduled,
          )
            ? true
            : undefined,
        30_000,
      );

    /** The builds that completed each of the run's workflow tasks, in order. */
    const buildsOf = (events: HistoryEvent[]) =>
      events
        .filter((event) => Number(event.eventType) === EventType.WorkflowTaskCompleted)
        .map((event) => event.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId);
    const failedTasksOf = (events: HistoryEvent[]) =>
      events.filter((event) => Number(event.eventType) === EventType.WorkflowTaskFailed);
    /**
     * Whether the run's first command is build B's one-millisecond timer (build A's is a local or a regular activity).
     */
    const startsWithBuildBTimer = (events: HistoryEvent[]) => {
      const first = events.find((event) =>
        [EventType.TimerStarted, EventType.ActivityTaskScheduled, EventType.MarkerRecorded].includes(
          Number(event.eventType),
        ),
      );
      const timeout = first?.timerStartedEventAttributes?.startToFireTimeout;
      return (
        Number(first?.eventType) === EventType.TimerStarted &&
        Number(timeout?.seconds ?? 0) === 0 &&
        Number(timeout?.nanos) === 1_000_000
      );
    };

    async function finalStatusOf(fundingId: string): Promise<string> {
      return waitFor(
        `funding ${fundingId} final`,
        async () => {
          const { status } = await stack.database.funding.findUniqueOrThrow({
            where: { id: fundingId },
            select: { status: true },
          });
          return ['APPROVED', 'DECLINED', 'REJECTED', 'FAILED', 'NEEDS_REVIEW'].includes(status) ? status : undefined;
        },
        90_000,
      );
    }

    type Build = InProcessWorker & { buildId: string };
    const bundles = { B: 'build-b-workflows.ts', C: 'build-c-workflows.ts' } as const;
    /** The builds the file's cases share, each started at its first ask (a case run alone starts what it needs). */
    const builds = new Map<'A' | 'B' | 'C', Promise<Build>>();
    /**
     * A worker of build `name`, in `workers` until stopped: A is today's bundle and promotes itself as it starts
     * (`always`: current unless a newer build already is); B and C, bundles of their own, only register (`never`).
     */
    function build(name: 'A' | 'B' | 'C'): Promise<Build> {
      let running = builds.get(name);
      if (!running) {
        running = (async () => {
          const worker = await stack.createWorker(
            name === 'A'
              ? { workflowBundle: { codePath: inject('workflowBundlePath') }, promote: 'always' }
              : {
                  workflowBundle: {
                    code: await bundleWorkflows({
                      warnings: false,
                      workflowsPath: path.resolve(import.meta.dirname, bundles[name]),
                    }),
                  },
                  promote: 'never',
                },
          );
          workers.push(worker);
          return worker;
        })();
        builds.set(name, running);
      }
      return running;
    }
    /** Stops a build's worker now, as its process would stop (afterAll stops the others). */
    async function stopBuild(name: 'A' | 'B' | 'C'): Promise<void> {
      const running = await builds.get(name);
      if (!running) return;
      builds.delete(name);
      workers.splice(workers.indexOf(running), 1);
      await stopWorker(running);
    }
    const quiet = createLogger({ level: 'silent' });
    const versionOf = (buildId: string) => ({ deploymentName: stack.taskQueue, buildId });

    theCase(
      'promote-and-rollback',
      'a funding started on build A finishes on A after B is promoted, new ones run on B, a rollback sends new ones back to A; no workflow task fails',
      async () => {
        const a = await build('A');
        const b = await build('B');
        expect(a.buildId).not.toBe(b.buildId);

        // The server lists a build once its pollers have reached it (B's worker starts without waiting for that); in a
        // loaded CI run the real server's first answer to the CLI was that it knew no such deployment, a moment after
        // A's worker had made itself current. As the upgrade test does, the status is read until it lists both.
        const before = await waitFor(
          'builds A and B registered',
          async () => {
            const status = await deployCli('status', '--json');
            if (status.code !== 0) return undefined;
            const read = JSON.parse(status.stdout) as { current: string; versions: Array<{ buildId: string }> };
            return read.versions.length === 2 ? read : undefined;
          },
          60_000,
        );
        expect(before.current).toBe(a.buildId);
        expect(before.versions.map((version) => version.buildId).sort()).toEqual([a.buildId, b.buildId].sort());

        // F1 starts on A and waits on the wallet (its transfer takes 6 s to settle) while B is promoted.
        await stack.admin.settings({ processingDelayMs: 6000 });
        const f1 = await startFunding();
        await underWay('F1', f1);
        // B ramping (a canary an operator started): a worker of B starting with WORKER_PROMOTE=always leaves its share
        // as it is.
        const versionB = versionOf(b.buildId);
        expect((await deployCli('ramp', b.buildId, '10')).code).toBe(0);
        expect(await promoteOnStart(stack.temporal, versionB, 'always', quiet)).toBe('left');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({
          current: a.buildId,
          ramping: { buildId: b.buildId },
        });
        const promoted = await deployCli('promote', b.buildId);
        expect(promoted.code, promoted.stderr).toBe(0);
        expect(promoted.stdout).toContain(`${b.buildId} is now current`);
        await stack.admin.settings({ processingDelayMs: 0 });
        // A worker of A restarting (a container of the draining build, with WORKER_PROMOTE=always) does not take the
        // current version back from B: that is `deploy rollback`'s.
        const versionA = versionOf(a.buildId);
        expect(await promoteOnStart(stack.temporal, versionA, 'always', quiet)).toBe('left');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({ current: b.buildId });

        const f2 = await startFunding();
        expect(await finalStatusOf(f1.fundingId)).toBe('APPROVED');
        expect(await finalStatusOf(f2.fundingId)).toBe('APPROVED');

        // A canary under way: a rollback would move the current build and leave the canary's share, so it is refused;
        // `ramp <build> 0` ends the ramp.
        const canary = await deployCli('ramp', a.buildId, '10');
        expect(canary.code, canary.stderr).toBe(0);
        const refused = await deployCli('rollback');
        expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining(`${a.buildId} is ramping (10%`)]);
        // Nor is another build promoted past it: Temporal would leave the canary its share. Before: promoted, the ramp
        // kept.
        const promotedPast = await deployCli('promote', b.buildId);
        expect([promotedPast.code, promotedPast.stderr]).toEqual([
          1,
          expect.stringContaining(`${a.buildId} is ramping (10%`),
        ]);
        const routing = async () => {
          const answer = await deployCli('status', '--json');
          const { current, ramping } = JSON.parse(answer.stdout) as {
            current: string;
            ramping: { buildId: string } | null;
          };
          return { current, ramping: ramping?.buildId ?? null };
        };
        expect(await routing()).toEqual({ current: b.buildId, ramping: a.buildId });
        // Ending a ramp names the build that ramps: another's name ends nothing.
        const other = await deployCli('ramp', b.buildId, '0');
        expect([other.code, other.stderr]).toEqual([1, expect.stringContaining(`${b.buildId} is not ramping`)]);
        expect(await routing()).toEqual({ current: b.buildId, ramping: a.buildId });
        const ended = await deployCli('ramp', a.buildId, '0');
        expect([ended.code, ended.stdout]).toEqual([0, expect.stringContaining('no ramp')]);
        // The runs the canary took stay pinned to it: stopping its workers now would strand them (found by a read).
        expect(ended.stdout).toContain(`the runs ${a.buildId} took stay pinned to it: keep its workers until`);
        expect(await routing()).toEqual({ current: b.buildId, ramping: null });

        const rolledBack = await deployCli('rollback');
        expect(rolledBack.code, rolledBack.stderr).toBe(0);
        expect(rolledBack.stdout).toContain(`rolled back to ${a.buildId}`);
        // A worker of B restarting with WORKER_PROMOTE=always (B's containers are kept until its pinned runs finish)
        // does not undo the rollback, although B is the newer build.
        expect(await promoteOnStart(stack.temporal, versionB, 'always', quiet)).toBe('left');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({ current: a.buildId });
        const f3 = await startFunding();
        expect(await finalStatusOf(f3.fundingId)).toBe('APPROVED');

        const [h1, h2, h3] = await Promise.all([
          closedHistoryOf(f1.workflowId),
          closedHistoryOf(f2.workflowId),
          closedHistoryOf(f3.workflowId),
        ]);
        // F1: every task on A, before and after the promotion (several tasks: it waited on the wallet).
        expect(buildsOf(h1).length).toBeGreaterThan(2);
        expect(new Set(buildsOf(h1))).toEqual(new Set([a.buildId]));
        expect(startsWithBuildBTimer(h1)).toBe(false);
        // F2: B's code from its first command.
        expect(new Set(buildsOf(h2))).toEqual(new Set([b.buildId]));
        expect(startsWithBuildBTimer(h2)).toBe(true);
        // F3: back on A.
        expect(
          new Set(buildsOf(h3)),
          JSON.stringify(h3.map((event) => [event.eventType, event.workflowTaskCompletedEventAttributes])),
        ).toEqual(new Set([a.buildId]));
        expect(startsWithBuildBTimer(h3)).toBe(false);
        for (const events of [h1, h2, h3]) expect(failedTasksOf(events)).toEqual([]);

        const after = JSON.parse((await deployCli('status', '--json')).stdout) as { current: string };
        expect(after.current).toBe(a.buildId);
      },
      240_000,
    );

    theCase(
      'ramps-hold-back-a-new-build',
      'a build starting with WORKER_PROMOTE=always while a canary or unversioned workers ramp leaves the current build as the operator set it; a promote past an unversioned ramp is refused',
      async () => {
        // A current (after the rollback of the case before, or as it starts), B registered.
        const a = await build('A');
        const b = await build('B');
        // B ramping (a canary an operator started) as build C (today's commands, another bundle) starts: a worker of C
        // with WORKER_PROMOTE=always leaves the current version as it is, though C is the newest build. Before: C was
        // made current, and the canary kept its share beside it, unsaid (Temporal ends a ramp only by promoting it).
        expect((await deployCli('ramp', b.buildId, '10')).code).toBe(0);
        const c = await build('C');
        expect(await promoteOnStart(stack.temporal, versionOf(c.buildId), 'always', quiet)).toBe('left');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({
          current: a.buildId,
          ramping: { buildId: b.buildId },
        });
        expect((await deployCli('ramp', b.buildId, '0')).code).toBe(0);
        // A ramp to unversioned workers (Temporal's own CLI starts one: no ramping version, a share above 0) is a ramp
        // too. Before: taken for none, and C was made current beside it.
        await stack.temporal.workflowService.setWorkerDeploymentRampingVersion({
          namespace: stack.temporal.options.namespace,
          deploymentName: stack.taskQueue,
          buildId: '',
          percentage: 10,
          identity: 'test: temporal worker deployment set-ramping-version --unversioned',
        });
        expect(await promoteOnStart(stack.temporal, versionOf(c.buildId), 'always', quiet)).toBe('left');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({
          current: a.buildId,
          ramping: { buildId: 'unversioned', percent: 10 },
        });
        // Refused, with the one way out there is (no promote of unversioned workers).
        const past = await deployCli('promote', c.buildId);
        expect([past.code, past.stderr]).toEqual([1, expect.stringContaining('deploy ramp unversioned 0`')]);
        expect(past.stderr).not.toContain('promote unversioned');
        expect((await deployCli('ramp', 'unversioned', '0')).code).toBe(0);
        const again = await deployCli('ramp', 'unversioned', '0');
        expect([again.code, again.stderr]).toEqual([1, expect.stringContaining('unversioned is not ramping')]);
      },
      240_000,
    );

    theCase(
      'dev-stack-restart',
      'a restarted dev stack (WORKER_PROMOTE=replace) takes over the runs pinned to the build before it, whose worker is gone: they finish on the new build',
      async () => {
        const a = await build('A');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({ current: a.buildId });
        // F4 starts on A (the current build) and waits on the wallet; then A's worker stops, as a dev stack's does.
        await stack.admin.settings({ processingDelayMs: 4000 });
        const f4 = await startFunding();
        await underWay('F4', f4);
        await stopBuild('A');
        await stack.admin.settings({ processingDelayMs: 0 });
        // C (today's commands, another bundle) then starts as `walletflow dev` starts its worker
        // (WORKER_PROMOTE=replace).
        const c = await build('C');
        expect(await promoteOnStart(stack.temporal, versionOf(c.buildId), 'replace', quiet)).toBe('promoted');
        expect(await finalStatusOf(f4.fundingId)).toBe('APPROVED');
        const h4 = await closedHistoryOf(f4.workflowId);
        const taskBuilds = buildsOf(h4);
        expect(taskBuilds[0]).toBe(a.buildId);
        expect(taskBuilds.at(-1)).toBe(c.buildId);
        expect(failedTasksOf(h4)).toEqual([]);
        // The dev stack restarted on code changed back to an earlier build (A, registered before C, its worker gone):
        // `replace` takes the current version whatever build has it, where `always` would leave C current.
        expect(await promoteOnStart(stack.temporal, versionOf(a.buildId), 'always', quiet)).toBe('left');
        expect(await promoteOnStart(stack.temporal, versionOf(a.buildId), 'replace', quiet)).toBe('promoted');
        expect(JSON.parse((await deployCli('status', '--json')).stdout)).toMatchObject({ current: a.buildId });
        expect(await promoteOnStart(stack.temporal, versionOf(c.buildId), 'replace', quiet)).toBe('promoted');
      },
      240_000,
    );

    theCase(
      'unregistered-build',
      'refuses to promote a build no worker has registered, naming the ones it knows',
      async () => {
        const refused = await deployCli('promote', 'wf-00000000000000000000');
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('no worker has registered the build wf-00000000000000000000');
        const ramp = await deployCli('ramp', 'wf-00000000000000000000', '150');
        expect(ramp.code).toBe(64);
        expect(ramp.stderr).toContain('from 0 to 100');
      },
      60_000,
    );
  });
}
