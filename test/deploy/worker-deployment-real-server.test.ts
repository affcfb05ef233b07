// Safe deploys on a real Temporal server on PostgreSQL, as production runs it (built by scripts/setup.sh
// --temporal-server): two builds of the workflows as versions of one worker deployment, ramped, promoted and rolled
// back while money is in flight, with no workflow task failed; a build starting while a canary or unversioned workers
// ramp leaves the current build as it is; the CLI refuses a build no worker has registered (the cases of
// worker-deployment-cases.ts). A restarted `walletflow dev` runs on the dev server it uses: worker-deployment.test.ts.
import { startRealTemporal } from '../support/real-temporal.ts';
import { describeWorkerDeployment } from './worker-deployment-cases.ts';

describeWorkerDeployment('a real Temporal server on PostgreSQL', startRealTemporal, [
  'promote-and-rollback',
  'ramps-hold-back-a-new-build',
  'unregistered-build',
]);
