// Every write request to the ops API leaves the acting key's name behind (contract
// section 12; docs/security.md): after opsAuth, a POST, PUT, PATCH or DELETE is recorded in ops_action once its
// answer is sent, whatever it was (an accepted funding, a refused adjustment, a redelivery). The
// routes' own audits stay (funding events, resolvedBy, link events): this one covers every route,
// including routes added later, at once.
import type { RequestHandler } from 'express';
import { recordOpsAction } from '../../audit/ops-actions.ts';
import type { Database } from '../../lib/database.ts';
import type { Logger } from '../../lib/logger.ts';
import { actorSchema } from './ops-actor.ts';
import { opsKeyNameOf } from './ops-key.ts';

const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function auditOpsWrites(database: Database, logger: Logger): RequestHandler {
  return (req, res, next) => {
    if (!writeMethods.has(req.method)) {
      next();
      return;
    }
    const keyName = opsKeyNameOf(res.locals);
    const actor = actorSchema.safeParse(req.get('x-ops-actor'));
    const path = `/ops${req.path}`;
    let recorded = false;
    // Once: when the answer is sent, or when the client went away first (the write may still have happened).
    const record = () => {
      if (recorded) return;
      recorded = true;
      const requestId = typeof res.locals.requestId === 'string' ? res.locals.requestId : null;
      const status = res.writableFinished || res.headersSent ? res.statusCode : 0;
      recordOpsAction(database, { keyName, actor: actor.success ? actor.data : null, method: req.method, path, status, requestId }).catch((error: unknown) =>
        logger.error({ err: (error as Error).message, method: req.method, path }, 'could not record an ops write in the audit'),
      );
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}
