// Safe deploys on the suite's dev server (the Temporal CLI's): the cases of worker-deployment-cases.ts,
// two builds of the workflows as versions of one worker deployment, promoted, rolled back and
// replaced while money is in flight, with no workflow task failed. The same cases on a real
// Temporal server on PostgreSQL: worker-deployment-real-server.test.ts.
import { describeWorkerDeployment } from './worker-deployment-cases.ts';

describeWorkerDeployment('the dev server', async () => undefined);
