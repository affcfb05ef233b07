// Who acted, as audits record it (contract-decisions sections 12 and 15): an ops key by its name, a
// person signed in to the console by their name and, in parentheses, their identity at the
// identity provider (`Maria Santos (oidc:00u1ab)`). Maker-checker compares identities, never
// display names: a person who changes their display name is still who created the batch.

/** How a person signed in through OpenID Connect is recorded: their display name and subject. */
export function personActorName(displayName: string, subject: string): string {
  const id = `oidc:${subject}`;
  // Printable and short enough that the identity always fits the audited columns (128).
  const name = displayName.replace(/[^\x20-\x7e\u00a0-\uffff]/g, '').trim().slice(0, Math.max(1, 120 - id.length)) || 'staff member';
  return `${name} (${id})`;
}

/**
 * The identity behind a recorded actor: a person's `(oidc:…)` suffix, else the name itself (an ops
 * key's name); compared without regard to case, as key names are.
 */
export function actorIdentity(actor: string): string {
  const person = /\((oidc:[^()]+)\)$/.exec(actor);
  return (person ? person[1]! : actor).toLowerCase();
}

/** Whether two recorded actors are the same key or person (maker-checker). */
export const sameActor = (a: string, b: string): boolean => actorIdentity(a) === actorIdentity(b);

/**
 * Who a funding's or a payment's event names as having acted, as their records word it (`funding
 * requested by ops key X`, `cancelled by ops key X`, `resolved APPROVED by X: why`); null when
 * walletflow itself moved it (its workflow, the sweep without a person).
 */
export function actorNamedIn(detail: string | null): string | null {
  if (!detail) return null;
  const requested = /(?:requested|cancelled) by ops key (.+)$/.exec(detail);
  if (requested) return requested[1]!;
  const resolved = /^resolved [A-Z_]+ by (.+?): /.exec(detail);
  return resolved ? resolved[1]! : null;
}
