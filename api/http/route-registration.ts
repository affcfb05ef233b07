// Registers a route's handlers from its declaration (route-spec.ts): the method and the path are
// the declaration's, so the route answers exactly where the document says it does, and its
// handlers see the path's parameters by the names the declaration gives them. Who may call it is
// the declaration's too: a route with an ops scope gets its scope check as its first handler, so
// the scope comes from the route that runs, never from a second match of the path. Routers are
// exact (strictRouter): case-sensitive, and a trailing slash is another path.
import { Router, type RequestHandler } from 'express';
import { requireScope } from './actor.ts';
import type { AnyRouteSpec, PathParameterName, RouteSpec } from './route-spec.ts';

/** The parameters Express fills from a path template (every one is a string). */
export type PathParams<Path extends string> = { [Name in PathParameterName<Path>]: string };

/** `/ops/fundings/{fundingId}` as Express writes it: `/ops/fundings/:fundingId`. */
export const expressPath = (path: string): string => path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');

export type AddRoute = <Path extends string>(
  spec: RouteSpec<Path>,
  ...handlers: Array<RequestHandler<PathParams<Path>>>
) => void;

/** The checks a route's access puts before its handlers: an ops key's or a console person's scope. */
function scopeChecksOf(access: RouteSpec['access']): RequestHandler[] {
  if (typeof access !== 'object') return [];
  if ('opsScope' in access) return [requireScope(access.opsScope)];
  if ('consoleScope' in access && access.consoleScope !== null) return [requireScope(access.consoleScope)];
  return [];
}

/** The handler of a HEAD refused because its GET spends or calls something (route-spec.ts `headRefusedAnswers`). */
export const refuseHead: RequestHandler = (_req, res) => {
  res.setHeader('Allow', 'GET');
  res.status(405).end();
};

/**
 * A router that reaches a route only by its own spelling: `/ops/Fundings` and `/ops/fundings/` are
 * not `/ops/fundings` (contract-decisions section 12). Every router of the API is one.
 */
export const strictRouter = (): Router => Router({ caseSensitive: true, strict: true });

/**
 * Adds routes to `router`, which the app mounts at `mountPath` ('' for the app's root): a
 * declaration's path is from the app's root, so the router gets the rest of it. A declaration
 * outside the mount path fails at start-up. A route with an ops scope runs `requireScope` first;
 * `afterChecks` gives what an area runs next for each of its routes, from its declaration.
 */
export function routesOn(
  router: Router,
  mountPath = '',
  afterChecks: (spec: AnyRouteSpec) => RequestHandler[] = () => [],
): AddRoute {
  return (spec, ...handlers) => {
    const atMount = mountPath !== '' && spec.path === mountPath;
    if (!atMount && !spec.path.startsWith(`${mountPath}/`))
      throw new Error(`route ${spec.operationId}: ${spec.path} is not under ${mountPath}/`);
    const register = router[spec.method].bind(router) as (path: string, ...handlers: RequestHandler[]) => Router;
    const checks: RequestHandler[] = scopeChecksOf(spec.access);
    // Express fills exactly the parameters the path names, which PathParams derives from the same path.
    register(
      atMount ? '/' : expressPath(spec.path.slice(mountPath.length)),
      ...checks,
      ...afterChecks(spec),
      ...(handlers as unknown as RequestHandler[]),
    );
  };
}
