// Worker Deployment Versioning (docs/changing-workflows.md): every worker registers the version it
// runs, its deployment (WORKER_DEPLOYMENT_NAME, default the task queue's name) and a build id
// derived from its workflow bundle's code. Short workflows are pinned to the version they started
// on (a change to their commands needs no patch: runs in flight finish on the old build's workers);
// the long ones that continue as new move to the current version at their next run. Which version
// new workflows get is the deployment's current version: a worker makes its own current when
// WORKER_PROMOTE says so (`first-deploy`: only when the deployment has none yet; `always`: the dev
// stack, where each start runs new code; `never`), and `walletflow deploy promote|ramp|rollback`
// moves it otherwise.
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Logger } from './logger.ts';
import { buildIdOf } from './workflow-bundle.ts';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

export type PromotionPolicy = 'first-deploy' | 'always' | 'never';

/**
 * The version a worker of this bundle registers in `deploymentName`. Every worker of walletflow's
 * workflows is versioned: they name their versioning behaviour, which an unversioned worker refuses.
 */
export function bundleVersion(deploymentName: string, bundle: { code: string } | { codePath: string }): DeploymentVersion {
  return { deploymentName, buildId: buildIdOf('code' in bundle ? bundle.code : readFileSync(bundle.codePath)) };
}

/** The worker's options for its version: pinned unless a workflow says otherwise (setWorkflowOptions). */
export function versionedWorkerOptions(version: DeploymentVersion) {
  return { version, useWorkerVersioning: true as const, defaultVersioningBehavior: 'PINNED' as const };
}

/** What a deployment looks like now: its versions (with their drainage) and which is current and ramping. */
export async function describeDeployment(client: Client, deploymentName: string) {
  try {
    const { workerDeploymentInfo: info } = await client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName });
    return info ?? null;
  } catch (error) {
    // A deployment no worker has registered yet: none.
    if ((error as { code?: number }).code === 5) return null;
    throw error;
  }
}

/** The current version's build id, or null when there is none. */
export function currentBuildIdOf(info: Awaited<ReturnType<typeof describeDeployment>>): string | null {
  return info?.routingConfig?.currentDeploymentVersion?.buildId || null;
}

/** Makes `buildId` the deployment's current version: new workflows go to its workers. */
export async function setCurrentVersion(client: Client, version: DeploymentVersion, identity: string): Promise<void> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace: client.options.namespace, deploymentName: version.deploymentName, buildId: version.buildId, identity });
}

/**
 * Once this worker's version is registered (its pollers have reached the server), makes it the
 * current version when the policy says so. Answers what it did.
 */
export async function promoteOnStart(
  client: Client,
  version: DeploymentVersion,
  policy: PromotionPolicy,
  logger: Pick<Logger, 'info' | 'warn'>,
  options: { timeoutMs?: number } = {},
): Promise<'promoted' | 'already-current' | 'left'> {
  if (policy === 'never') return 'left';
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const info = await describeDeployment(client, version.deploymentName).catch(() => null);
    const registered = info?.versionSummaries?.some((summary) => summary.deploymentVersion?.buildId === version.buildId) ?? false;
    if (registered && info) {
      const current = currentBuildIdOf(info);
      if (current === version.buildId) return 'already-current';
      if (policy === 'first-deploy' && current !== null) {
        logger.info({ ...version, current }, 'worker deployment: this build is registered; the current version stays (walletflow deploy promote moves it)');
        return 'left';
      }
      await setCurrentVersion(client, version, `walletflow-worker ${version.buildId}`);
      logger.info({ ...version, previous: current }, 'worker deployment: this build is now the current version');
      return 'promoted';
    }
    if (Date.now() >= deadline) {
      logger.warn({ ...version }, 'worker deployment: this build did not appear in its deployment in time; not promoted');
      return 'left';
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
