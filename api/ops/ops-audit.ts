// Every write request to the ops API and the console leaves an audit row (contract section 12;
// docs/security.md): mounted before authentication, so a POST, PUT, PATCH or DELETE is recorded in
// ops_action once its answer is sent, whatever it was (an accepted funding, a refused adjustment, a
// 401 for a wrong key or a missing console session, a 403 for a missing scope or a bad form
// token, a 404 for a path no route has), with the key's or the person's name when one is known.
// A route that acts on a GET (the console's sign-in callback) says so with `auditAsAct`. The
// routes' own audits stay (funding events, resolvedBy, link events): this one covers every route,
// including routes added later, at once. A request without a name (no session, no valid key) is
// recorded within the audit's budget per client address (audit/ops-actions.ts): past it, counted
// in one summary row per address, channel and minute.
import type { RequestHandler, Response } from 'express';
import { endedSessionNote, type OpsActionLog } from '../../audit/ops-actions.ts';
import { actorOf } from '../http/actor.ts';
import { actorNoteOf } from './ops-actor.ts';
import { rateKeyOf } from '../http/rate-limit.ts';

const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const AS_ACT = 'auditAsAct';

/** Records this request as an act, whatever its method (a sign-in that arrives as a GET). */
export function auditAsAct(res: Response): void {
  res.locals[AS_ACT] = true;
}

/**
 * The API's channel keeps the operator a caller names in X-Ops-Actor as a note beside the key's
 * name; the console's ignores it: there the person signed in is who acts, and nobody else.
 */
export function auditOpsWrites(
  log: OpsActionLog,
  channel: 'api' | 'console' = 'api',
  options: {
    /**
     * Whose session a request without a live one named, when it is known to be over (the console's: idle, past its
     * lifetime, its key gone): recorded as the act's note, so a write refused for it says whose session sent it.
     */
    endedSessionOf?: (res: Response) => string | null;
  } = {},
): RequestHandler {
  return (req, res, next) => {
    const note = channel === 'api' ? actorNoteOf(req) : null;
    // As it was asked (req.path is after the mount point; an odd spelling is kept as sent).
    const path = `${req.baseUrl}${req.path}`;
    let recorded = false;
    // Once: when the answer is sent, or when the client went away first (the write may still have happened).
    const record = () => {
      if (recorded || !(writeMethods.has(req.method) || res.locals[AS_ACT] === true)) return;
      recorded = true;
      const requestId = typeof res.locals.requestId === 'string' ? res.locals.requestId : null;
      const status = res.writableFinished || res.headersSent ? res.statusCode : 0;
      const keyName = actorOf(res.locals)?.name ?? null;
      const ended = keyName === null ? (options.endedSessionOf?.(res) ?? null) : null;
      log.record({
        keyName,
        actor: ended === null ? note : endedSessionNote(ended),
        method: req.method,
        path,
        status,
        requestId,
        channel,
        client: rateKeyOf(req.ip),
      });
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}
