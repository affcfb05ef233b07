// Who acted, for the audit of an ops action (a resolve): the ops key's name (contract section 12),
// with the operator the caller names in X-Ops-Actor, when well-formed, as a note after it. The note
// is the caller's own text: it is cleaned as a display name is (domain/actor.ts plainName), so no
// parenthesis, colon or look-alike of one can make it read as a person's `(oidc:…)` identity.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { plainName } from '../../domain/actor.ts';
import type { ParameterSpec } from '../http/route-spec.ts';
import { opsKeyNameOf } from './ops-key.ts';

/** The X-Ops-Actor header as sent: printable ASCII (ignored when malformed); kept as plainName has it. */
export const actorSchema = z.string().regex(/^[\x20-\x7e]{1,100}$/);

/** The X-Ops-Actor header of a route that records who acted, as its declaration names it. */
export const actorHeader = (description: string): Record<string, ParameterSpec & { required: boolean }> => ({
  'X-Ops-Actor': {
    schema: actorSchema,
    required: false,
    description: `${description}; kept as plain text: letters, digits, spaces and . ' - , @ _ (anything else, a parenthesis or a colon, becomes a space)`,
  },
});

/** The X-Ops-Actor note of a request, cleaned (plainName); null when absent, malformed or nothing is left. */
export function actorNoteOf(req: Request): string | null {
  const sent = actorSchema.safeParse(req.get('x-ops-actor'));
  return sent.success ? plainName(sent.data) || null : null;
}

/** `<key name>` or `<key name> (as <X-Ops-Actor, cleaned>)`, at most 128 characters (the audited columns' width). */
export function resolvedByOf(req: Request, res: Response): string {
  const note = actorNoteOf(req);
  const name = opsKeyNameOf(res.locals);
  return note ? `${name} (as ${plainName(note, Math.max(1, 128 - name.length - 6))})` : name;
}
