// Who acted, as audits record it (contract-decisions sections 12 and 15): an ops key by its name, a
// person signed in to the console by their name and, in parentheses, their identity at the
// identity provider (`Maria Santos (oidc:00u1ab)`). Maker-checker compares identities, never
// display names: a person who changes their display name is still who created the batch.

/** Apostrophes of names (O’Brien, the Hawaiian ʻokina) as the plain one. */
const apostrophes = /[\u2018\u2019\u02bb\u02bc]/gu;
/**
 * Characters that show nothing, or nothing but a blank, however they are classed: every
 * default-ignorable code point (zero-width characters, bidirectional controls, the Hangul fillers
 * U+115F, U+1160, U+3164, U+FFA0 that are letters, the combining grapheme joiner U+034F that is a
 * mark), controls, format, private-use, unassigned and lone surrogate code points.
 */
const invisible = /[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}]/gu;
/**
 * Letters that look like punctuation: the spacing modifier letters (ː ˂ ˃ ˈ, U+02B0–U+02FF), the
 * modifier tone letters (U+A700–U+A721), the modifier colons (꞉, U+A788–U+A78A), the Lisu tone
 * letters (ꓸ ꓹ ꓺ ꓻ ꓼ ꓽ, U+A4F8–U+A4FD: a full stop, commas, a semicolon, a colon), the N'Ko tone
 * apostrophes and low line (ߴ ߵ ߺ) and the vertical tilde (ⸯ). Not the letters names are written
 * with that are modifier letters too (々, ー).
 */
const punctuationLikeLetter = /[\u02b0-\u02ff\ua700-\ua721\ua788-\ua78a\ua4f8-\ua4fd\u07f4\u07f5\u07fa\u2e2f]/u;
/** One piece of a name: a letter with its marks, or one character that is not a letter. */
const piece = /(\p{L})(\p{M}*)|[\p{Nd} .'\-,@_]|[\s\S]/gu;

/**
 * Text as walletflow shows and records it for a name someone else chose (a display name from the
 * identity provider, the X-Ops-Actor a caller sends): plain text that cannot pass for another
 * person. An allow-list, after compatibility forms are folded (NFKC) and everything invisible is
 * dropped (`invisible`): letters of any script with at most two combining marks each (but for
 * `punctuationLikeLetter`), digits, spaces and `. ' - , @ _`. Anything else (a bracket of any kind
 * or anything that looks like one, a colon, a symbol, a mark on no letter) becomes a space; runs of
 * spaces become one; cut to `maxCharacters` whole characters. Nothing left: ''.
 */
export function plainName(text: string, maxCharacters = 100): string {
  const kept = text
    .normalize('NFKC')
    .replace(invisible, '')
    .normalize('NFKC')
    .replace(apostrophes, "'")
    .replace(piece, (whole, letter: string | undefined, marks: string | undefined) => {
      if (letter !== undefined)
        return punctuationLikeLetter.test(letter)
          ? ' '
          : letter +
              Array.from(marks ?? '')
                .slice(0, 2)
                .join('');
      return /^[\p{Nd} .'\-,@_]$/u.test(whole) ? whole : ' ';
    })
    .replace(/ {2,}/g, ' ')
    .trim();
  // Cut to whole characters (code points), never half a surrogate pair.
  const characters = Array.from(kept);
  return characters.length <= maxCharacters ? kept : characters.slice(0, maxCharacters).join('').trim();
}

/**
 * A display name as walletflow shows and records it (plainName): the identity provider's name is
 * often the person's own to choose. Empty then: `staff member`.
 */
export function shownPersonName(displayName: string, maxCharacters = 100): string {
  return plainName(displayName, maxCharacters) || 'staff member';
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
 * How a wallet user acting on the partner's page in the wallet app (a withdrawal, a deposit) is recorded: their
 * partner user id, and the wallet's reference of the session they opened the page with (its Request-Reference-No,
 * which the wallet operator's records know too): `wallet:5f2… (app:REF)`.
 */
export function walletUserActorName(partnerUserId: string, sessionReference: string): string {
  const id = `app:${sessionReference.replace(/[()]/g, '')}`;
  return `${partnerUserId.replace(/[()]/g, '').slice(0, Math.max(1, 124 - id.length))} (${id})`;
}

/** A recorded person's identity at the provider, or a wallet user's app session, at the end of the recorded name. */
const personIdentity = /\(((?:oidc|app):[^()]+)\)$/;

/** Whether a recorded actor is a wallet user in the wallet app (walletUserActorName), not a person or a key. */
export const isWalletUser = (actor: string): boolean => /\(app:[^()]+\)$/.test(actor);

/**
 * Who holds each ops key (OPS_KEY_OWNERS): its name, without case, mapped to its owner's identity (`oidc:<subject>`).
 * A key with no owner is an identity of its own.
 */
export type KeyOwners = ReadonlyMap<string, string>;
const noOwners: KeyOwners = new Map();

/**
 * The identity behind a recorded actor: a person's `(oidc:…)` suffix as the provider gave it (a subject is
 * case-sensitive: two people may differ only in case), else an ops key's owner's when it has one (`owners`), else the
 * key's name, without regard to case, as key names are compared.
 */
export function actorIdentity(actor: string, owners: KeyOwners = noOwners): string {
  const person = personIdentity.exec(actor);
  if (person) return person[1]!;
  const name = actor.toLowerCase();
  return owners.get(name) ?? name;
}

/** What a recorded actor's identity is spelled as where it is stored: the identity itself, and each key it owns. */
export function spellingsOf(identity: string, owners: KeyOwners = noOwners): string[] {
  return [identity, ...[...owners].filter(([, owner]) => owner === identity).map(([name]) => name)];
}

/** Who acted, in the words of a record's event: a person by their recorded name, an ops key as one. */
export function actorWords(actor: string): string {
  if (isWalletUser(actor)) return `wallet user ${actor}`;
  return personIdentity.test(actor) ? actor : `ops key ${actor}`;
}

/** Whether two recorded actors are the same key or person (maker-checker): a key and its owner are one. */
export const sameActor = (a: string, b: string, owners: KeyOwners = noOwners): boolean =>
  actorIdentity(a, owners) === actorIdentity(b, owners);

/**
 * Who a funding's or a payment's event names as having acted, as their records word it (actorWords: `funding
 * requested by ops key X`, `cancelled by Maria Santos (oidc:…)`, `payment requested by wallet user wallet:… (app:…)`,
 * `resolved APPROVED by X: why`); null when walletflow itself moved it (its workflow, the sweep without a person).
 */
export function actorNamedIn(detail: string | null): string | null {
  if (!detail) return null;
  // An ops key as one, or a person by their recorded name; never walletflow's own `cancelled by ops`.
  const requested =
    /(?:requested|cancelled) by (?:ops key (.+)|wallet user (.+ \(app:[^()]+\))|(.+ \(oidc:[^()]+\)))$/.exec(detail);
  if (requested) return (requested[1] ?? requested[2] ?? requested[3])!;
  const resolved = /^resolved [A-Z_]+ by (.+?): /.exec(detail);
  return resolved ? resolved[1]! : null;
}
