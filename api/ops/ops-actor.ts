// Who acted, for the audit of an ops action (a resolve): the ops key's name (contract section 12),
// with the operator the caller names in X-Ops-Actor, when well-formed, as a note after it.
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ParameterSpec } from '../http/route-spec.ts';
import { opsKeyNameOf } from './ops-key.ts';

/** The X-Ops-Actor header: who resolves, as the caller names them (ignored when malformed). */
export const actorSchema = z.string().regex(/^[\x20-\x7e]{1,100}$/);

/** The X-Ops-Actor header of a route that records who acted, as its declaration names it. */
export const actorHeader = (description: string): Record<string, ParameterSpec & { required: boolean }> => ({
  'X-Ops-Actor': { schema: actorSchema, required: false, description },
});

/** `<key name>` or `<key name> (as <X-Ops-Actor>)`, at most 128 characters (the audited columns' width). */
export function resolvedByOf(req: Request, res: Response): string {
  const actor = actorSchema.safeParse(req.get('x-ops-actor'));
  return `${opsKeyNameOf(res.locals)}${actor.success ? ` (as ${actor.data})` : ''}`.slice(0, 128);
}
