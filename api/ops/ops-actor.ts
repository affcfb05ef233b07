// Who acted, for the audit of an ops action (a resolve): the operator the caller names in
// X-Ops-Actor, when well-formed, always with the ops key's own identity (res.locals.opsActor).
import type { Request, Response } from 'express';
import { z } from 'zod';

/** The X-Ops-Actor header: who resolves, as the caller names them (ignored when malformed). */
export const actorSchema = z.string().regex(/^[\x20-\x7e]{1,100}$/);

/** `<named operator> (<key>)`, at most 128 characters (the audited columns' width). */
export function resolvedByOf(req: Request, res: Response): string {
  const actor = actorSchema.safeParse(req.get('x-ops-actor'));
  return `${actor.success ? `${actor.data} ` : ''}(${String(res.locals.opsActor)})`.slice(0, 128);
}
