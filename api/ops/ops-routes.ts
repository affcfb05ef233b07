// Every route of the ops API, in the document's order, as api/docs/openapi.ts documents them; each
// router registers its own, with its scope check first (api/http/route-registration.ts).
import type { AnyRouteSpec } from '../http/route-spec.ts';
import { accountsRoutes } from './accounts-routes.ts';
import { batchesRoutes } from './batches-routes.ts';
import { fundingsRoutes } from './fundings-routes.ts';
import { linksRoutes } from './links-routes.ts';
import { paymentsRoutes } from './payments-routes.ts';
import { settlementRoutes } from './settlement-routes.ts';
import { webhooksRoutes } from './webhooks-routes.ts';

export const opsRoutes: readonly AnyRouteSpec[] = [
  ...fundingsRoutes,
  ...batchesRoutes,
  ...paymentsRoutes,
  ...linksRoutes,
  ...accountsRoutes,
  ...settlementRoutes,
  ...webhooksRoutes,
];
