// Every write request to the ops API leaves an audit row (contract section 12; docs/security.md):
// mounted before opsAuth, so a POST, PUT, PATCH or DELETE is recorded in ops_action once its
// answer is sent, whatever it was (an accepted funding, a refused adjustment, a 401 for a wrong
// key, a 403 for a missing scope, a 404 for a path no route has), with the key's name when a valid
// key was presented. The routes' own audits stay (funding events, resolvedBy, link events): this
// one covers every route, including routes added later, at once.
import type { RequestHandler } from 'express';
import type { OpsActionLog } from '../../audit/ops-actions.ts';
import { actorOf } from '../http/actor.ts';
import { actorSchema } from './ops-actor.ts';

const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function auditOpsWrites(log: OpsActionLog, channel: 'api' | 'console' = 'api'): RequestHandler {
  return (req, res, next) => {
    if (!writeMethods.has(req.method)) {
      next();
      return;
    }
    const actor = actorSchema.safeParse(req.get('x-ops-actor'));
    // As it was asked (req.path is after the mount point; an odd spelling is kept as sent).
    const path = `${req.baseUrl}${req.path}`;
    let recorded = false;
    // Once: when the answer is sent, or when the client went away first (the write may still have happened).
    const record = () => {
      if (recorded) return;
      recorded = true;
      const requestId = typeof res.locals.requestId === 'string' ? res.locals.requestId : null;
      const status = res.writableFinished || res.headersSent ? res.statusCode : 0;
      log.record({ keyName: actorOf(res.locals)?.name ?? null, actor: actor.success ? actor.data : null, method: req.method, path, status, requestId, channel });
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}
