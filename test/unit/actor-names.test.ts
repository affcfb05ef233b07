// How a person signed in through OpenID Connect is named (domain/actor.ts): their display name from
// the identity provider, shown as plain text that cannot pass for another person, then their own
// identity. A display name is the provider's, and so, often, the person's own to choose.
import { describe, expect, it } from 'vitest';
import {
  actorIdentity,
  actorNamedIn,
  actorWords,
  personActorName,
  plainName,
  sameActor,
  spellingsOf,
} from '../../domain/actor.ts';

const bidiControls = [
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
];
/**
 * What a shown name is made of, whatever it was given: letters with at most two marks each, digits, spaces and . ' - ,
 * @ _.
 */
const allowed = /^(?:\p{L}\p{M}{0,2}|[\p{Nd} .'\-,@_])+$/u;
/**
 * Characters that show nothing (or a blank) but are letters or marks, and so passed as text: they pushed the real
 * identity out of view.
 */
const fillers = ['\u3164', '\u115f', '\uffa0', '\u2800', '\u034f', '\u1160', '\u17b4'];
const invisible = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e'];

describe('a person’s recorded name', () => {
  it('is the display name and the person’s own identity', () => {
    expect(personActorName('Maria Santos', 'staff-maria')).toBe('Maria Santos (oidc:staff-maria)');
    expect(actorIdentity(personActorName('Maria Santos', 'staff-maria'))).toBe('oidc:staff-maria');
  });

  it('is compared by the provider’s subject as it is: two people whose subjects differ only in case are two people', () => {
    // Subjects are case-sensitive (an Azure subject is base64url). Before: lower-cased, one person to maker-checker.
    expect(sameActor('Ana Cruz (oidc:AbC123)', 'Ana Cruz (oidc:abc123)')).toBe(false);
    expect(sameActor('Ana Cruz (oidc:AbC123)', 'Ana C. (oidc:AbC123)')).toBe(true);
    expect(actorIdentity('Ana Cruz (oidc:AbC123)')).toBe('oidc:AbC123');
    // An ops key's name is compared without case, as keys are named.
    expect(sameActor('Treasury-Bot', 'treasury-bot')).toBe(true);
  });

  it('is named in a record’s event as a person, an ops key as a key, and read back from either', () => {
    // Before: every actor was an "ops key", a person signed in to the console too.
    expect(actorWords('Maria Santos (oidc:00u1ab)')).toBe('Maria Santos (oidc:00u1ab)');
    expect(actorWords('treasury-bot')).toBe('ops key treasury-bot');
    expect(actorNamedIn('cancelled by Maria Santos (oidc:00u1ab)')).toBe('Maria Santos (oidc:00u1ab)');
    expect(actorNamedIn('funding requested by ops key treasury-bot')).toBe('treasury-bot');
    expect(actorNamedIn('item of batch b-1, requested by ops key default (as maria)')).toBe('default (as maria)');
    // walletflow's own words name nobody.
    expect(actorNamedIn('cancelled by ops')).toBeNull();
    expect(actorNamedIn('funding requested')).toBeNull();
  });

  it.each([
    ['an identity in parentheses', 'Jose Reyes (oidc:staff-jose)'],
    ['an identity in full-width parentheses', 'Jose Reyes （oidc:staff-jose）'],
    ['an identity in small or superscript parentheses', 'Jose Reyes ﹙oidc:staff-jose﹚ ⁽oidc:staff-jose⁾'],
    ['an identity in ornamental brackets', 'Jose Reyes ❨oidc:staff-jose❩ ⟮oidc:staff-jose⟯'],
    ['a bidirectional override that reverses what follows', `Jose Reyes \u202e)esoj-ffats:cdio(`],
    ['a right-to-left isolate', `Jose Reyes \u2067(oidc:staff-jose)\u2069`],
    ['a line break before a second name', 'Jose Reyes\n(oidc:staff-jose)'],
    ['an identity in angle quotation marks', 'Jose Reyes ‹oidc:staff-jose› «oidc:staff-jose»'],
    ['an identity in parenthesis pieces (mathematical symbols)', 'Jose Reyes ⎛oidc:staff-jose⎠'],
    ['an identity in Yi radicals that look like brackets', 'Jose Reyes ꒰oidc:staff-jose꒱'],
    [
      'an identity between modifier-letter colons and Canadian syllabics that look like angle brackets',
      'Jose Reyes ᐸoidc꞉staff-joseᐳ',
    ],
  ])('cannot carry %s: no second identity is shown, and the real one is the last', (_what, displayName) => {
    const recorded = personActorName(displayName, 'staff-mallory');
    expect(recorded).toMatch(/ \(oidc:staff-mallory\)$/);
    // No bracket of any kind, no control or format character (bidirectional controls are format characters).
    const shown = recorded.slice(0, -' (oidc:staff-mallory)'.length);
    expect(shown).not.toMatch(/[\p{Ps}\p{Pe}\p{Cc}\p{Cf}]/u);
    // Only letters (with a mark or two), digits, spaces and . ' - , @ _: nothing that reads as a bracket or a colon.
    expect(shown).toMatch(allowed);
    expect(recorded).not.toContain('(oidc:staff-jose)');
    expect(shown).not.toContain('oidc:');
    expect(sameActor(recorded, 'Jose Reyes (oidc:staff-jose)')).toBe(false);
  });

  it('shows a letter that looks like punctuation as a space, in any script, and keeps the marks names are written with', () => {
    // Found by a read: the Lisu tone letters (U+A4F8–A4FD) are letters NFKC keeps, and ꓽ reads as a colon, ꓸ as a
    // full stop: "oidcꓽstaff-jose" was shown as it was sent.
    const lookAlikes = ['ː', '˸', '꞉', 'ꓸ', 'ꓹ', 'ꓺ', 'ꓻ', 'ꓼ', 'ꓽ', 'ߴ', 'ߵ', 'ߺ', 'ⸯ'];
    for (const lookAlike of lookAlikes)
      expect(plainName(`oidc${lookAlike}staff`), `U+${lookAlike.codePointAt(0)!.toString(16)}`).toBe('oidc staff');
    // Letters that are part of names stay: the Japanese iteration and prolonged sound marks.
    expect(plainName('佐々木 ジョージ')).toBe('佐々木 ジョージ');
  });

  it('keeps no bidirectional control, invisible or control character, and keeps letters of every script', () => {
    const recorded = personActorName(
      `${bidiControls.join('')}Ma${invisible.join('')}ria\u0007 Dela Cruz 李娜 Nguyễn أحمد`,
      'staff-maria',
    );
    for (const character of [...bidiControls, ...invisible, '\u0007']) expect(recorded).not.toContain(character);
    expect(recorded).toBe('Maria Dela Cruz 李娜 Nguyễn أحمد (oidc:staff-maria)');
  });

  it('drops blank fillers (default-ignorable letters and marks, the Braille blank) so nothing pushes the real identity out of view', () => {
    const displayName = `Jose Reyes (oidc:staff-jose)${fillers.map((filler) => filler.repeat(20)).join('')}`;
    const recorded = personActorName(displayName, 'staff-mallory');
    for (const filler of fillers) expect(recorded, `U+${filler.codePointAt(0)!.toString(16)}`).not.toContain(filler);
    expect(recorded).not.toMatch(/\p{Default_Ignorable_Code_Point}/u);
    expect(recorded).toBe('Jose Reyes oidc staff-jose (oidc:staff-mallory)');
    // A name of fillers only is no name.
    expect(personActorName(fillers.join(''), 'staff-x')).toBe('staff member (oidc:staff-x)');
  });

  it('keeps at most two marks on a letter, none on anything else, and runs of spaces as one', () => {
    expect(personActorName(`Zalgo${'\u0301'.repeat(30)} Nguye\u0302\u0303n`, 'staff-z')).toBe(
      'Zalgó\u0301\u0301 Nguyễn (oidc:staff-z)',
    );
    expect(personActorName(`Ana \u0301\u0301 ${'\u00a0'.repeat(40)}\u2003 Cruz`, 'staff-a')).toBe(
      'Ana Cruz (oidc:staff-a)',
    );
  });

  it('is never empty, and cut to whole characters', () => {
    expect(personActorName('\u202e\u200b()', 'staff-x')).toBe('staff member (oidc:staff-x)');
    // A letter outside the Basic Multilingual Plane (two UTF-16 units): never cut in half.
    const long = personActorName('\u{20000}'.repeat(200), 'staff-x');
    expect(long.length).toBeLessThanOrEqual(128);
    expect(long).toMatch(/^(\u{20000})+ \(oidc:staff-x\)$/u);
    expect(personActorName('😀 Maria 😀', 'staff-x')).toBe('Maria (oidc:staff-x)');
  });
});

describe('a key and the person who owns it (OPS_KEY_OWNERS)', () => {
  it('are one for maker-checker: the person by their recorded name, the key by its name in any case; a subject keeps its case', () => {
    const owners = new Map([['ana-cli', 'oidc:00u-AbC']]);
    const ana = personActorName('Ana Cruz', '00u-AbC');
    expect(sameActor('ana-cli', ana, owners)).toBe(true);
    expect(sameActor('ANA-CLI', ana, owners)).toBe(true);
    // Another person whose subject differs only in case is another person; a key no one owns is itself.
    expect(sameActor('ana-cli', personActorName('Ana Cruz', '00u-abc'), owners)).toBe(false);
    expect(sameActor('other-cli', ana, owners)).toBe(false);
    expect(actorIdentity('ana-cli', owners)).toBe('oidc:00u-AbC');
    // What the threshold's sum looks for as created_by: the person's identity, and each key they own.
    expect(spellingsOf('oidc:00u-AbC', owners)).toEqual(['oidc:00u-AbC', 'ana-cli']);
    expect(spellingsOf('other-cli', owners)).toEqual(['other-cli']);
  });
});
