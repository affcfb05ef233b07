// Safe deploys on the suite's dev server (the Temporal CLI's), what `walletflow dev` runs on: a restarted dev stack
// (WORKER_PROMOTE=replace, refused in production) takes over the runs of the build before it (a case of
// worker-deployment-cases.ts). The production procedure (ramp, promote, rollback with money in flight) runs on a real
// Temporal server on PostgreSQL: worker-deployment-real-server.test.ts.
import { describeWorkerDeployment } from './worker-deployment-cases.ts';

describeWorkerDeployment('the dev server', async () => undefined, ['dev-stack-restart']);
