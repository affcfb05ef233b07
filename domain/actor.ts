// Who acted, as audits record it (contract-decisions sections 12 and 15): an ops key by its name, a
// person signed in to the console by their name and, in parentheses, their identity at the
// identity provider (`Maria Santos (oidc:00u1ab)`). Maker-checker compares identities, never
// display names: a person who changes their display name is still who created the batch.

/**
 * A display name as walletflow shows and records it: plain text that cannot pass for another
 * person. The identity provider's name is often the person's own to choose, so: compatibility
 * forms folded (NFKC: full-width and small parentheses become plain ones); no brackets of any kind
 * (no `(oidc:…)` look-alike of another person's identity); no control, format (bidirectional
 * overrides and isolates, zero-width characters), private-use or unassigned characters; at most
 * two combining marks on a letter; runs of spaces as one. Empty then: `staff member`.
 */
export function shownPersonName(displayName: string, maxCharacters = 100): string {
  const text = displayName
    .normalize('NFKC')
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Ps}\p{Pe}]/gu, '')
    .replace(/(\p{M}{2})\p{M}+/gu, '$1')
    .replace(/[\p{Z}\s]+/gu, ' ')
    .trim();
  // Cut to whole characters (code points), never half a surrogate pair.
  return Array.from(text).slice(0, maxCharacters).join('').trim() || 'staff member';
}

/** How a person signed in through OpenID Connect is recorded: their display name (shownPersonName) and subject. */
export function personActorName(displayName: string, subject: string): string {
  const id = `oidc:${subject}`;
  // Short enough that the identity always fits the audited columns (128 UTF-16 units).
  let name = shownPersonName(displayName, Math.max(1, 124 - id.length));
  while (name.length + id.length + 3 > 128 && name.length > 1) name = Array.from(name).slice(0, -1).join('').trim();
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
