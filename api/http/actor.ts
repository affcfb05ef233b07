// Who acts on a request that needs a scope: an ops key (api/ops/ops-auth.ts) or, later, a person
// signed in to the console. Its name is what audits record; its scopes are what it may do. A
// route's scope is checked by the route itself, registered with its handlers from its declaration
// (route-registration.ts), never by a second match of the request's path (docs/architecture.md,
// invariant 12).
import type { RequestHandler, Response } from 'express';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { sendProblem } from './problem.ts';

export interface Actor {
  /** An ops key (its name is the key's name), or a person signed in. */
  kind: 'key' | 'person';
  /** What audits record: a key's name, a person's name. Never a secret. */
  name: string;
  scopes: ReadonlySet<OpsScope>;
}

const ACTOR = 'actor';
const REFUSAL = 'scopeRefusal';
const CHECKED = 'checkedScope';
const locals = (res: Response): Record<string, unknown> => res.locals;

/** How an area answers a refused scope in its own style (the console: a page); absent: a problem document. */
export type ScopeRefusal = (
  res: Response,
  refusal: { status: 401 | 403; code: 'UNAUTHORIZED' | 'SCOPE_REQUIRED'; detail: string },
) => void;

/** Set by an area before its routes (the console), so its refusals read like its pages. */
export function answerScopeRefusalsWith(locals: Record<string, unknown>, refuse: ScopeRefusal): void {
  locals[REFUSAL] = refuse;
}

/** Called by whoever authenticated the request (opsAuth): from here on the request acts as `actor`. */
export function setActor(locals: Record<string, unknown>, actor: Actor): void {
  locals[ACTOR] = actor;
}

/** The request acts as nobody from here on (a sign-in, until it succeeds: not the session its browser still holds). */
export function clearActor(locals: Record<string, unknown>): void {
  delete locals[ACTOR];
}

/** The request's actor, if it was authenticated. */
export function actorOf(locals: Record<string, unknown>): Actor | undefined {
  const actor = locals[ACTOR];
  return typeof actor === 'object' && actor !== null && 'scopes' in actor ? (actor as Actor) : undefined;
}

/**
 * The scope the request's route checked (requireScope), for a long answer to check again as it goes (a stream's
 * pushes).
 */
export function checkedScopeOf(locals: Record<string, unknown>): OpsScope | undefined {
  return locals[CHECKED] as OpsScope | undefined;
}

const SCOPES_NOW = 'actorScopesNow';

/**
 * Set by whoever authenticated the request when what the actor rests on may end while a long answer goes on (a console
 * session: a sign-out, its idle end, a role taken away): reads the scopes the actor may use now, null when none.
 */
export function setScopesNow(locals: Record<string, unknown>, read: () => Promise<ReadonlySet<OpsScope> | null>): void {
  locals[SCOPES_NOW] = read;
}

/** The actor's scopes now (see setScopesNow); null when none, or when nobody set how to read them. */
export function scopesNowOf(locals: Record<string, unknown>): Promise<ReadonlySet<OpsScope> | null> {
  const read = locals[SCOPES_NOW] as (() => Promise<ReadonlySet<OpsScope> | null>) | undefined;
  return read ? read() : Promise.resolve(null);
}

/**
 * Whether a long answer (a CSV read a page at a time) may go on: the actor still has the scope its route checked. An
 * actor nothing can end meanwhile (an ops key, read when the process started) always may.
 */
export async function mayGoOn(locals: Record<string, unknown>): Promise<boolean> {
  if (locals[SCOPES_NOW] === undefined) return true;
  const scopes = await scopesNowOf(locals);
  const scope = checkedScopeOf(locals);
  return scopes !== null && (scope === undefined || scopes.has(scope));
}

/**
 * The check a route with a scope runs before its own handlers: 403 SCOPE_REQUIRED without the
 * scope. A request nobody authenticated (a route mounted where no authentication runs) is refused
 * too (401): the check fails closed.
 */
export function requireScope(scope: OpsScope): RequestHandler & { readonly requiredScope: OpsScope } {
  const check: RequestHandler = (req, res, next) => {
    const refuse =
      (res.locals[REFUSAL] as ScopeRefusal | undefined) ??
      ((answer, refusal) =>
        sendProblem(answer, { ...refusal, title: refusal.status === 401 ? 'Unauthorized' : 'Forbidden' }));
    const actor = actorOf(res.locals);
    if (!actor) {
      refuse(res, { status: 401, code: 'UNAUTHORIZED', detail: 'this route needs an authenticated caller' });
      return;
    }
    if (!actor.scopes.has(scope)) {
      refuse(res, {
        status: 403,
        code: 'SCOPE_REQUIRED',
        detail: `${actor.kind === 'key' ? `the ops API key ${actor.name}` : actor.name} lacks the scope ${scope} that ${req.method} ${req.baseUrl}${req.route ? String(req.route.path) : req.path} needs`,
      });
      return;
    }
    locals(res)[CHECKED] = scope;
    next();
  };
  // What the check asks, for whoever lists the routes (test/unit/route-declarations.test.ts).
  return Object.assign(check, { requiredScope: scope });
}
