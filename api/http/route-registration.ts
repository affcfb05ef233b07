// Registers a route's handlers from its declaration (route-spec.ts): the method and the path are
// the declaration's, so the route answers exactly where the document says it does, and its
// handlers see the path's parameters by the names the declaration gives them.
import type { RequestHandler, Router } from 'express';
import type { PathParameterName, RouteSpec } from './route-spec.ts';

/** The parameters Express fills from a path template (every one is a string). */
export type PathParams<Path extends string> = { [Name in PathParameterName<Path>]: string };

/** `/ops/fundings/{fundingId}` as Express writes it: `/ops/fundings/:fundingId`. */
export const expressPath = (path: string): string => path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');

export type AddRoute = <Path extends string>(spec: RouteSpec<Path>, ...handlers: Array<RequestHandler<PathParams<Path>>>) => void;

/**
 * Adds routes to `router`, which the app mounts at `mountPath` ('' for the app's root): a
 * declaration's path is from the app's root, so the router gets the rest of it. A declaration
 * outside the mount path fails at start-up.
 */
export function routesOn(router: Router, mountPath = ''): AddRoute {
  return (spec, ...handlers) => {
    if (!spec.path.startsWith(`${mountPath}/`)) throw new Error(`route ${spec.operationId}: ${spec.path} is not under ${mountPath}/`);
    const register = router[spec.method].bind(router) as (path: string, ...handlers: RequestHandler[]) => Router;
    // Express fills exactly the parameters the path names, which PathParams derives from the same path.
    register(expressPath(spec.path.slice(mountPath.length)), ...(handlers as unknown as RequestHandler[]));
  };
}
