// Safe deploys on a real Temporal server on PostgreSQL, as production runs it (built by
// scripts/setup.sh --temporal-server): the cases of worker-deployment-cases.ts, two builds of the
// workflows as versions of one worker deployment, promoted, rolled back and replaced while money is
// in flight, with no workflow task failed. The same cases on the dev server: worker-deployment.test.ts.
import { startRealTemporal } from '../support/real-temporal.ts';
import { describeWorkerDeployment } from './worker-deployment-cases.ts';

describeWorkerDeployment('a real Temporal server on PostgreSQL', startRealTemporal);
