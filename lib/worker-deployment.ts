// Worker Deployment Versioning (docs/changing-workflows.md): every worker registers the version it
// runs, its deployment (WORKER_DEPLOYMENT_NAME, default the task queue's name) and a build id
// derived from its workflow bundle's code. Short workflows are pinned to the version they started
// on (a change to their commands needs no patch: runs in flight finish on the old build's workers);
// the long-lived ones are auto-upgrade: a run moves to the current version at its next workflow
// task, replayed there (as do the runs of unversioned workers, from a release before versioning).
// Which version new workflows get is the deployment's current version: a worker makes its own current when
// WORKER_PROMOTE says so (`first-deploy`: only when the deployment has none yet; `always`: unless a
// newer build is current; `never`; `replace`: whatever build is current, and the runs pinned to other
// builds move to this one, for the dev stack, whose restart leaves no worker of the build before),
// and `walletflow deploy promote|ramp|rollback`
// moves it otherwise.
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Logger } from './logger.ts';
import { buildIdOf } from './workflow-bundle.ts';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

const PINNED = proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;

export type PromotionPolicy = 'first-deploy' | 'always' | 'never' | 'replace';

/**
 * The version a worker of this bundle registers in `deploymentName`. Every worker of walletflow's
 * workflows is versioned: they name their versioning behaviour, which an unversioned worker refuses.
 */
export function bundleVersion(
  deploymentName: string,
  bundle: { code: string } | { codePath: string },
): DeploymentVersion {
  return { deploymentName, buildId: buildIdOf('code' in bundle ? bundle.code : readFileSync(bundle.codePath)) };
}

/** The worker's options for its version: pinned unless a workflow says otherwise (setWorkflowOptions). */
export function versionedWorkerOptions(version: DeploymentVersion) {
  return { version, useWorkerVersioning: true as const, defaultVersioningBehavior: 'PINNED' as const };
}

/** What a deployment looks like now: its versions (with their drainage) and which is current and ramping. */
export async function describeDeployment(client: Client, deploymentName: string) {
  return (await readDeployment(client, deploymentName))?.info ?? null;
}

/**
 * The deployment as `describeDeployment` gives it, with the token of its routing as read: a change of the current
 * version sent with it is refused (FAILED_PRECONDITION) when the routing moved since, so that what was checked of it
 * (no other build ramping, no newer build current) still holds when the change is made.
 */
export async function readDeployment(client: Client, deploymentName: string) {
  try {
    const { workerDeploymentInfo: info, conflictToken } = await client.workflowService.describeWorkerDeployment({
      namespace: client.options.namespace,
      deploymentName,
    });
    return info ? { info, conflictToken: conflictToken?.length ? conflictToken : null } : null;
  } catch (error) {
    // A deployment no worker has registered yet: none.
    if ((error as { code?: number }).code === 5) return null;
    throw error;
  }
}

/**
 * The runs of these workflow types still open on the task queue with no deployment version: started
 * by unversioned workers (a release from before Worker Versioning). They move to the current
 * version at their next workflow task; until none is left, the previous release's workers keep
 * polling and a build that drops what their histories need must not become current
 * (docs/changing-workflows.md).
 */
async function countUnversionedRuns(
  client: Client,
  taskQueue: string,
  workflowTypes: readonly string[],
): Promise<{ total: number; byType: Record<string, number> }> {
  const byType: Record<string, number> = {};
  for (const type of workflowTypes) {
    const query = `ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/['\\]/g, '\\$&')}' AND WorkflowType = '${type}' AND TemporalWorkerDeployment IS NULL`;
    byType[type] = (await client.workflow.count(query)).count;
  }
  return { total: Object.values(byType).reduce((sum, count) => sum + count, 0), byType };
}

/**
 * The unversioned runs `countUnversionedRuns` finds on the configured task queue and, when the deployment's sweep
 * Schedule starts its runs on another (TEMPORAL_TASK_QUEUE changed since it was made, say by a `.env` the previous
 * release's compose ignored), on that one too: the previous release's runs are where its workers polled, and a count of
 * the configured queue alone would say 0 while every one of them is open. `otherTaskQueue`: that queue, or null.
 */
export async function countUnversionedRunsOfDeployment(
  client: Client,
  taskQueue: string,
  workflowTypes: readonly string[],
  scheduleId: string,
): Promise<{ total: number; byType: Record<string, number>; otherTaskQueue: string | null }> {
  const here = await countUnversionedRuns(client, taskQueue, workflowTypes);
  const scheduled = await scheduleTaskQueueOf(client, scheduleId);
  if (scheduled === null || scheduled === taskQueue) return { ...here, otherTaskQueue: null };
  const there = await countUnversionedRuns(client, scheduled, workflowTypes);
  const byType = Object.fromEntries(
    workflowTypes.map((type) => [type, (here.byType[type] ?? 0) + (there.byType[type] ?? 0)]),
  );
  return { total: here.total + there.total, byType, otherTaskQueue: scheduled };
}

/**
 * The task queue a Schedule starts its workflows on; null when there is no such Schedule. Read from the service's own
 * answer, not the SDK's `describe()`, which decodes the action's arguments: those are encrypted
 * (PAYLOAD_ENCRYPTION_KEYS) wherever the Schedule's maker had the codec, and the operator's `deploy status` has no key
 * to read them with, nor needs one.
 */
async function scheduleTaskQueueOf(client: Client, scheduleId: string): Promise<string | null> {
  try {
    const { schedule } = await client.workflowService.describeSchedule({
      namespace: client.options.namespace,
      scheduleId,
    });
    return schedule?.action?.startWorkflow?.taskQueue?.name || null;
  } catch (error) {
    // No such Schedule (gRPC NOT_FOUND).
    if ((error as { code?: number }).code === 5) return null;
    throw error;
  }
}

/** A protobuf timestamp in milliseconds, or null when unset. */
export const millisecondsOf = (timestamp: { seconds?: unknown; nanos?: unknown } | null | undefined): number | null =>
  timestamp?.seconds === undefined || timestamp.seconds === null
    ? null
    : Number(timestamp.seconds) * 1000 + Math.floor(Number(timestamp.nanos ?? 0) / 1e6);

/** When `buildId` last stopped being its deployment's current or ramping version, or null when it never did. */
function deactivatedAt(info: Awaited<ReturnType<typeof describeDeployment>>, buildId: string): number | null {
  const summary = info?.versionSummaries?.find((candidate) => candidate.deploymentVersion?.buildId === buildId);
  return millisecondsOf(summary?.lastDeactivationTime);
}

/** When the deployment's server registered `buildId` (its first worker's poll), or null when it does not say. */
function registeredAt(info: Awaited<ReturnType<typeof describeDeployment>>, buildId: string): number | null {
  const summary = info?.versionSummaries?.find((candidate) => candidate.deploymentVersion?.buildId === buildId);
  return millisecondsOf(summary?.createTime);
}

/** The current version's build id, or null when there is none. */
export function currentBuildIdOf(info: Awaited<ReturnType<typeof describeDeployment>>): string | null {
  return info?.routingConfig?.currentDeploymentVersion?.buildId || null;
}

/** How a ramp to unversioned workers is named (Temporal: no ramping version, a share above 0). */
export const UNVERSIONED_RAMP = 'unversioned';

/**
 * The ramping version's build id, UNVERSIONED_RAMP for a ramp to unversioned workers (Temporal's own CLI can start
 * one), or null when nothing ramps.
 */
export function rampingBuildIdOf(info: Awaited<ReturnType<typeof describeDeployment>>): string | null {
  const buildId = info?.routingConfig?.rampingDeploymentVersion?.buildId;
  if (buildId) return buildId;
  return (info?.routingConfig?.rampingVersionPercentage ?? 0) > 0 ? UNVERSIONED_RAMP : null;
}

/** Whether `version` is its deployment's current version now (Temporal's answer; an error is the caller's). */
export async function isCurrentVersion(client: Client, version: DeploymentVersion): Promise<boolean> {
  return currentBuildIdOf(await describeDeployment(client, version.deploymentName)) === version.buildId;
}

/** Makes `buildId` the deployment's current version: new workflows go to its workers. */
export async function setCurrentVersion(
  client: Client,
  version: DeploymentVersion,
  identity: string,
  /** The routing's token as read (readDeployment): refused if it moved since. Absent: made current whatever it is. */
  conflictToken?: Uint8Array | null,
): Promise<void> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: client.options.namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity,
    ...(conflictToken ? { conflictToken } : {}),
  });
}

/**
 * Once this worker's version is registered (its pollers have reached the server), makes it the
 * current version when the policy says so. Answers what it did; `never` only looks, once: a build
 * already current (a worker restarted after `walletflow deploy promote`) answers `already-current`.
 */
export async function promoteOnStart(
  client: Client,
  version: DeploymentVersion,
  policy: PromotionPolicy,
  logger: Pick<Logger, 'info' | 'warn'>,
  options: { timeoutMs?: number } = {},
): Promise<'promoted' | 'already-current' | 'left'> {
  if (policy === 'never') {
    return (await isCurrentVersion(client, version).catch(() => false)) ? 'already-current' : 'left';
  }
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const read = await readDeployment(client, version.deploymentName).catch(() => null);
    const info = read?.info;
    const registered =
      info?.versionSummaries?.some((summary) => summary.deploymentVersion?.buildId === version.buildId) ?? false;
    if (registered && info) {
      const current = currentBuildIdOf(info);
      if (current === version.buildId) {
        if (policy === 'replace') await adoptPinnedRuns(client, version, logger);
        return 'already-current';
      }
      if (policy === 'first-deploy' && current !== null) {
        logger.info(
          { ...version, current },
          'worker deployment: this build is registered; the current version stays (walletflow deploy promote moves it)',
        );
        return 'left';
      }
      // With `always`, a worker of an older build restarting (a container of the draining build, a rolling update's
      // straggler) never takes the current version back from a newer one: that is `walletflow deploy rollback`'s.
      // `replace` (walletflow dev: one worker, whatever build was last) always takes it: a stack restarted on code
      // changed back to an earlier build has no worker of the newer one left.
      const currentAt = current === null ? null : registeredAt(info, current);
      const ownAt = registeredAt(info, version.buildId);
      if (policy === 'always' && currentAt !== null && ownAt !== null && ownAt < currentAt) {
        logger.warn(
          { ...version, current },
          'worker deployment: a newer build is current; this older one stays as it is (walletflow deploy rollback moves back)',
        );
        return 'left';
      }
      // Nor does a build an operator has routed to: one ramping now (a canary's share is theirs to change), or one
      // that was current or ramping once and was moved away from (a rollback, a promotion past it, a ramp ended). A
      // worker of it restarting (its containers are kept until its pinned runs finish) would undo that unseen. Nor
      // any build while another ramps: Temporal ends a ramp only when the build it ramps is made current, so the
      // canary would keep its share beside this build, unsaid (as `walletflow deploy promote` refuses).
      const ramping = rampingBuildIdOf(info);
      if (policy === 'always' && (ramping !== null || deactivatedAt(info, version.buildId) !== null)) {
        logger.warn(
          { ...version, current, ramping },
          ramping === version.buildId
            ? 'worker deployment: this build is ramping; its share stays as it is (walletflow deploy promote or ramp changes it)'
            : ramping === UNVERSIONED_RAMP
              ? 'worker deployment: unversioned workers are ramping; this build stays as it is (walletflow deploy ramp unversioned 0 ends that ramp)'
              : ramping !== null
                ? 'worker deployment: another build is ramping; this one stays as it is (walletflow deploy promote moves it once the ramp is ended or promoted)'
                : 'worker deployment: this build was moved away from (a rollback, a later promotion or a ramp ended); it stays as it is (walletflow deploy promote moves back to it)',
        );
        return 'left';
      }
      try {
        // With the routing's token as read: moved since (a ramp begun, another build promoted), the change is refused
        // and everything above is looked at again.
        await setCurrentVersion(client, version, `walletflow-worker ${version.buildId}`, read?.conflictToken);
      } catch (error) {
        // FAILED_PRECONDITION: the current version's task queues are not all registered for this one
        // yet (a worker's workflow and activity pollers reach the server one after the other), or the routing moved
        // since it was read.
        if ((error as { code?: number }).code !== 9 || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      logger.info({ ...version, previous: current }, 'worker deployment: this build is now the current version');
      if (policy === 'replace') await adoptPinnedRuns(client, version, logger);
      return 'promoted';
    }
    if (Date.now() >= deadline) {
      logger.warn(
        { ...version },
        'worker deployment: this build did not appear in its deployment in time; not promoted',
      );
      return 'left';
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Moves the running workflows pinned to another build of the deployment onto the current one (an
 * auto-upgrade override: their next task runs on the current build's workers, their history
 * replayed on its code, as an unversioned worker's would be). For the dev stack, where a restart
 * leaves no worker of the build before; never in a deployment whose other builds' workers still run
 * (production refuses WORKER_PROMOTE=replace). Answers how many moved.
 */
export async function adoptPinnedRuns(
  client: Client,
  version: DeploymentVersion,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<number> {
  let moved = 0;
  const query = `ExecutionStatus = 'Running' AND TemporalWorkerDeployment = '${version.deploymentName}'`;
  for await (const execution of client.workflow.list({ query })) {
    const { raw } = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
    const versioning = raw.workflowExecutionInfo?.versioningInfo;
    const pinned = Number(versioning?.behavior) === PINNED;
    const elsewhere = versioning?.deploymentVersion?.buildId !== version.buildId;
    if (!pinned || !elsewhere || versioning?.versioningOverride) continue;
    await client.workflowService.updateWorkflowExecutionOptions({
      namespace: client.options.namespace,
      workflowExecution: { workflowId: execution.workflowId, runId: execution.runId },
      workflowExecutionOptions: { versioningOverride: { autoUpgrade: true } },
      updateMask: { paths: ['versioning_override'] },
    });
    moved += 1;
  }
  if (moved > 0) logger.info({ ...version, moved }, 'worker deployment: runs pinned to other builds moved to this one');
  return moved;
}
