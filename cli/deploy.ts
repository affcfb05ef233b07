// `walletflow deploy status | promote <build> | ramp <build> <percent> | rollback`: the worker
// deployment's versions and where new workflows go (docs/changing-workflows.md). Pinned workflows
// finish on the build they started on; `promote` sends new ones to another build, `ramp` a share of
// them, `rollback` back to the build that was current before. Wraps Temporal's worker deployment
// API, on the configuration's Temporal and deployment (WORKER_DEPLOYMENT_NAME, default the task
// queue's name). `status` also counts the runs of walletflow's workflows still open on no build at
// all: started by a release from before Worker Versioning, they move to the current build at their
// next workflow task, and the previous release's workers stay until none is left.
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../lib/config.ts';
import {
  countUnversionedRunsOfDeployment,
  currentBuildIdOf,
  rampingBuildIdOf,
  readDeployment,
  setCurrentVersion,
  UNVERSIONED_RAMP,
  millisecondsOf,
} from '../lib/worker-deployment.ts';
import { temporalConnectionOptions } from '../lib/temporal.ts';
import { deliverWebhooksWorkflowType } from '../workflows/deliver-webhooks.contract.ts';
import { fundBatchWorkflowType } from '../workflows/fund-batch.contract.ts';
import { fundLaneWorkflowType } from '../workflows/fund-lane.contract.ts';
import { fundWalletWorkflowType } from '../workflows/fund-wallet.contract.ts';
import { onboardEmbeddedSessionWorkflowType } from '../workflows/onboard-embedded-session.contract.ts';
import { payWalletWorkflowType } from '../workflows/pay-wallet.contract.ts';
import { purgeExpiredWorkflowType } from '../workflows/purge-expired.contract.ts';
import { reconcileFundingsWorkflowType, sweepScheduleId } from '../workflows/sweep.contract.ts';
import { settleDayWorkflowType } from '../workflows/settle-day.contract.ts';

/**
 * Every workflow type walletflow's workers run: the ones whose unversioned runs `status` counts
 * (test/unit/workflow-contracts.test.ts holds it to workflows/index.ts).
 */
export const workflowTypes = [
  fundWalletWorkflowType,
  fundLaneWorkflowType,
  payWalletWorkflowType,
  onboardEmbeddedSessionWorkflowType,
  fundBatchWorkflowType,
  deliverWebhooksWorkflowType,
  reconcileFundingsWorkflowType,
  purgeExpiredWorkflowType,
  settleDayWorkflowType,
];

export type DeployAction =
  | { kind: 'status'; json?: boolean }
  | { kind: 'promote'; buildId: string }
  | { kind: 'ramp'; buildId: string; percent: string }
  | { kind: 'rollback' };

export async function runDeploy(action: DeployAction): Promise<number> {
  const config = loadConfig();
  const address = config.temporal.address ?? `127.0.0.1:${process.env.WALLETFLOW_TEMPORAL_PORT ?? 7233}`;
  const deploymentName = config.workerDeployment.name;
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...temporalConnectionOptions(address, config.temporal.security),
      connectTimeout: 5000,
    });
  } catch {
    console.error(
      `walletflow deploy: Temporal is not reachable at ${address} (is \`walletflow dev\` running, or TEMPORAL_ADDRESS set?)`,
    );
    return 3;
  }
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace });
    const unversionedRuns = () =>
      countUnversionedRunsOfDeployment(client, config.temporal.taskQueue, workflowTypes, sweepScheduleId);
    const read = await readDeployment(client, deploymentName);
    const info = read?.info;
    if (!read || !info) {
      console.error(
        `walletflow deploy: no worker has registered the deployment ${deploymentName} yet (start a worker first)`,
      );
      if (action.kind === 'status') {
        const unversioned = await unversionedRuns();
        console.error(unversionedLine(unversioned));
        if (unversioned.otherTaskQueue)
          console.error(otherQueueLine(config.temporal.taskQueue, unversioned.otherTaskQueue));
      }
      return 1;
    }
    const versions: VersionLine[] = (info.versionSummaries ?? []).map((summary) => ({
      buildId: summary.deploymentVersion?.buildId ?? '',
      drainage: summary.drainageInfo?.status ?? summary.drainageStatus ?? null,
      createdAt: millisecondsOf(summary.createTime),
      // When it last stopped being current or ramping, and when it last became current (null: never).
      deactivatedAt: millisecondsOf(summary.lastDeactivationTime),
      lastCurrentAt: millisecondsOf(summary.lastCurrentTime),
    }));
    const current = currentBuildIdOf(info);
    const ramping = rampingBuildIdOf(info);
    const known = (buildId: string) => versions.some((version) => version.buildId === buildId);
    const identity = `walletflow deploy (${process.env.USER ?? 'operator'})`;
    switch (action.kind) {
      case 'status': {
        const rampPercent = info.routingConfig?.rampingVersionPercentage ?? 0;
        const unversioned = await unversionedRuns();
        if (action.json) {
          console.log(
            JSON.stringify(
              {
                deployment: deploymentName,
                current,
                ramping: ramping ? { buildId: ramping, percent: rampPercent } : null,
                versions,
                unversioned,
              },
              null,
              2,
            ),
          );
          return 0;
        }
        console.log(
          `deployment ${deploymentName}: current ${current ?? 'none'}${ramping ? `, ramping ${ramping} at ${rampPercent}%` : ''}`,
        );
        for (const version of versions) {
          const role =
            version.buildId === current
              ? 'current'
              : version.buildId === ramping
                ? 'ramping'
                : drainageWord(version.drainage);
          console.log(`  ${version.buildId.padEnd(26)} ${role}`);
        }
        console.log(unversionedLine(unversioned));
        if (unversioned.otherTaskQueue)
          console.log(otherQueueLine(config.temporal.taskQueue, unversioned.otherTaskQueue));
        return 0;
      }
      case 'promote':
        if (!known(action.buildId)) return unknownBuild(action.buildId, versions);
        // Temporal ends a ramp only when the build it ramps is the one made current: promoting another would leave the
        // canary its share of new workflows (and of the auto-upgrade runs), unsaid. Ending it is the operator's act.
        if (ramping && ramping !== action.buildId) {
          console.error(
            `walletflow deploy promote: ${ramping} is ramping (${info.routingConfig?.rampingVersionPercentage ?? 0}% of new workflows), and stays so whatever is current; ` +
              `end that first with \`walletflow deploy ramp ${ramping} 0\`` +
              (ramping === UNVERSIONED_RAMP ? '' : `, or promote ${ramping} itself`),
          );
          return 1;
        }
        await setCurrentVersion(client, { deploymentName, buildId: action.buildId }, identity, read.conflictToken);
        console.log(
          `deployment ${deploymentName}: ${action.buildId} is now current (was ${current ?? 'none'}); workflows already running stay on their build`,
        );
        return 0;
      case 'ramp': {
        const percent = Number(action.percent);
        if (!Number.isFinite(percent) || percent < 0 || percent > 100) {
          console.error('walletflow deploy ramp: the share must be a number from 0 to 100');
          return 64;
        }
        // A ramp to unversioned workers (started with Temporal's own CLI) is ended by its name, as any other.
        const endsUnversioned = percent === 0 && action.buildId === UNVERSIONED_RAMP;
        if (!known(action.buildId) && !endsUnversioned) return unknownBuild(action.buildId, versions);
        if (percent === 0 && ramping !== action.buildId) {
          console.error(
            `walletflow deploy ramp: ${action.buildId} is not ramping (${ramping ? `${ramping} is` : 'no build is'}); nothing ended`,
          );
          return 1;
        }
        // 0 ends the ramp (no ramping version: an empty build id at 0 %), so that a rollback may follow.
        await client.workflowService.setWorkerDeploymentRampingVersion({
          namespace: client.options.namespace,
          deploymentName,
          buildId: percent === 0 ? '' : action.buildId,
          percentage: percent,
          identity,
          ...(read.conflictToken ? { conflictToken: read.conflictToken } : {}),
        });
        console.log(
          percent === 0
            ? `deployment ${deploymentName}: no ramp; every new workflow goes to ${current ?? 'none'}` +
                (endsUnversioned
                  ? ''
                  : `; the runs ${action.buildId} took stay pinned to it: keep its workers until \`walletflow deploy status\` says it drained`)
            : `deployment ${deploymentName}: ${percent}% of new workflows go to ${action.buildId}, the rest to ${current ?? 'none'}`,
        );
        return 0;
      }
      case 'rollback': {
        // A canary under way is what changed last, and a rollback moves the current build, not the ramp: it would take
        // the healthy current build's share and leave the canary's. End the ramp first.
        if (ramping) {
          console.error(
            `walletflow deploy rollback: ${ramping} is ramping (${info.routingConfig?.rampingVersionPercentage ?? 0}% of new workflows); ` +
              `end that first with \`walletflow deploy ramp ${ramping} 0\` (its share goes back to ${current ?? 'none'}), then roll back if the current build is the bad one`,
          );
          return 1;
        }
        // Its workers must still run.
        const previous = rollbackTarget(versions, current);
        if (!previous) {
          console.error(
            current === null
              ? `walletflow deploy rollback: no build of ${deploymentName} is current; name the one to send new workflows to with \`walletflow deploy promote <build>\``
              : `walletflow deploy rollback: no build of ${deploymentName} was current before ${current}`,
          );
          return 1;
        }
        await setCurrentVersion(client, { deploymentName, buildId: previous.buildId }, identity, read.conflictToken);
        console.log(
          `deployment ${deploymentName}: rolled back to ${previous.buildId} (from ${current}); workflows already running stay on their build`,
        );
        return 0;
      }
    }
  } catch (error) {
    // FAILED_PRECONDITION: the routing moved since it was read (another deploy command, a worker promoting itself;
    // the change carried its token), or the build's task queues are not all registered yet. Nothing was changed.
    if ((error as { code?: number }).code !== 9) throw error;
    console.error(
      `walletflow deploy ${action.kind}: Temporal refused the change, nothing was changed: ${(error as Error).message}; ` +
        'the routing may have moved since it was read: look with `walletflow deploy status` and run it again',
    );
    return 1;
  } finally {
    await connection.close();
  }
}

/** A version as `status --json` lists it: the times in milliseconds, null when unset. */
export interface VersionLine {
  buildId: string;
  drainage: unknown;
  createdAt: number | null;
  deactivatedAt: number | null;
  lastCurrentAt: number | null;
}

/**
 * The build a rollback returns to: of those that were current once and are not now, the one that stopped last. A build
 * that was only ever ramped (a canary turned down) is not one: it never took all new workflows. A server that reports
 * no version's last time as current (the Temporal CLI's dev server and server 1.29 do not) cannot tell them apart:
 * there, of the builds registered before the current one, the one that stopped being current or ramping last. With
 * no current build (new workflows sent to unversioned workers by hand), none: the build that stopped last is the one
 * just abandoned, and `deploy promote <build>` names the one to go to.
 */
export function rollbackTarget(versions: readonly VersionLine[], current: string | null): VersionLine | undefined {
  if (current === null) return undefined;
  const reportsCurrent = versions.some((version) => version.lastCurrentAt !== null);
  const currentCreatedAt = versions.find((version) => version.buildId === current)?.createdAt ?? null;
  return versions
    .filter(
      (version) =>
        version.buildId !== current &&
        version.deactivatedAt !== null &&
        (reportsCurrent
          ? version.lastCurrentAt !== null
          : // Not told which builds were current: an older build than the current one. A canary is a newer build, and
            // one ramped and turned down after the promotion stopped last: a rollback went to it.
            currentCreatedAt === null || (version.createdAt ?? 0) < currentCreatedAt),
    )
    .sort((a, b) => (b.deactivatedAt ?? 0) - (a.deactivatedAt ?? 0))[0];
}

/** What `status` says of the runs on no build (a release from before Worker Versioning started them). */
function unversionedLine(unversioned: { total: number; byType: Record<string, number> }): string {
  if (unversioned.total === 0) return 'unversioned runs open: 0 (no run from before Worker Versioning is left)';
  const types = Object.entries(unversioned.byType)
    .filter(([, count]) => count > 0)
    .map(([type, count]) => `${type} ${count}`)
    .join(', ');
  return `unversioned runs open: ${unversioned.total} (${types}): keep the previous release's workers running until this is 0`;
}

/** The configured task queue is not the one the deployment's Schedules start their runs on. */
function otherQueueLine(taskQueue: string, otherTaskQueue: string): string {
  return (
    `warning: TEMPORAL_TASK_QUEUE is ${taskQueue}, but this deployment's schedules start their runs on ${otherTaskQueue}` +
    ` (counted above): no worker of this configuration polls it. Keep TEMPORAL_TASK_QUEUE=${otherTaskQueue}` +
    ' (docs/changing-workflows.md)'
  );
}

function drainageWord(status: unknown): string {
  switch (status) {
    case 1:
    case 'VERSION_DRAINAGE_STATUS_DRAINING':
      return 'draining (pinned workflows still run on it)';
    case 2:
    case 'VERSION_DRAINAGE_STATUS_DRAINED':
      return 'drained (its workers may stop)';
    default:
      return 'inactive';
  }
}

function unknownBuild(buildId: string, versions: Array<{ buildId: string }>): number {
  console.error(
    `walletflow deploy: no worker has registered the build ${buildId}; known: ${versions.map((version) => version.buildId).join(', ') || 'none'}`,
  );
  return 1;
}
