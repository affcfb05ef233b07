// Authentication of the ops API: `Authorization: Bearer <key>` against OPS_API_KEYS (ops-key-guard.ts:
// constant-time, wrong keys limited per address across processes: 429 with Retry-After); each key has a name (what
// audits record) and scopes. The scope a route needs is checked by the route itself, registered
// with it from its declaration (api/http/route-registration.ts): this only says who is asking
// (api/http/actor.ts). A request without a key guesses nothing: 401, not counted.
import type { RequestHandler } from 'express';
import { sendProblem } from '../http/problem.ts';
import { rememberOpsKey } from './ops-key.ts';
import { createOpsKeyGuard, type OpsKeyGuard, type OpsKeyGuardOptions } from './ops-key-guard.ts';

/** The guard's options (a guard of its own), or the process's guard shared with the console's sign-in. */
export type OpsAuthOptions = OpsKeyGuardOptions | { guard: OpsKeyGuard };

export function opsAuth(options: OpsAuthOptions): RequestHandler {
  const guard = 'guard' in options ? options.guard : createOpsKeyGuard(options);
  return async (req, res, next) => {
    const header = req.get('authorization') ?? '';
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    const match = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(header);
    const checked = await guard.check(req.ip, match?.[1]);
    if (checked.kind === 'limited') {
      res.setHeader('Retry-After', String(Math.ceil(checked.waitMs / 1000)));
      sendProblem(res, {
        status: 429,
        code: 'TOO_MANY_FAILED_ATTEMPTS',
        title: 'Too Many Requests',
        detail: 'too many requests with a wrong ops API key; wait and retry',
      });
      return;
    }
    if (checked.kind === 'wrong') {
      res.setHeader('WWW-Authenticate', 'Bearer realm="walletflow-ops"');
      sendProblem(res, {
        status: 401,
        code: 'UNAUTHORIZED',
        title: 'Unauthorized',
        detail: match ? 'the ops API key is not valid' : 'send Authorization: Bearer <ops API key>',
      });
      return;
    }
    const accepted = checked.key;
    // Who did it, for audits: the key's name, never the key.
    rememberOpsKey(res.locals, accepted);
    next();
  };
}
