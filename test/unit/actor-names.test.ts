// How a person signed in through OpenID Connect is named (domain/actor.ts): their display name from
// the identity provider, shown as plain text that cannot pass for another person, then their own
// identity. A display name is the provider's, and so, often, the person's own to choose.
import { describe, expect, it } from 'vitest';
import { actorIdentity, personActorName, sameActor } from '../../domain/actor.ts';

const bidiControls = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c'];
const invisible = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e'];

describe('a person’s recorded name', () => {
  it('is the display name and the person’s own identity', () => {
    expect(personActorName('Maria Santos', 'staff-maria')).toBe('Maria Santos (oidc:staff-maria)');
    expect(actorIdentity(personActorName('Maria Santos', 'staff-maria'))).toBe('oidc:staff-maria');
  });

  it.each([
    ['an identity in parentheses', 'Jose Reyes (oidc:staff-jose)'],
    ['an identity in full-width parentheses', 'Jose Reyes （oidc:staff-jose）'],
    ['an identity in small or superscript parentheses', 'Jose Reyes ﹙oidc:staff-jose﹚ ⁽oidc:staff-jose⁾'],
    ['an identity in ornamental brackets', 'Jose Reyes ❨oidc:staff-jose❩ ⟮oidc:staff-jose⟯'],
    ['a bidirectional override that reverses what follows', `Jose Reyes \u202e)esoj-ffats:cdio(`],
    ['a right-to-left isolate', `Jose Reyes \u2067(oidc:staff-jose)\u2069`],
    ['a line break before a second name', 'Jose Reyes\n(oidc:staff-jose)'],
  ])('cannot carry %s: no second identity is shown, and the real one is the last', (_what, displayName) => {
    const recorded = personActorName(displayName, 'staff-mallory');
    expect(recorded).toMatch(/ \(oidc:staff-mallory\)$/);
    // No bracket of any kind, no control or format character (bidirectional controls are format characters).
    expect(recorded.slice(0, -' (oidc:staff-mallory)'.length)).not.toMatch(/[\p{Ps}\p{Pe}\p{Cc}\p{Cf}]/u);
    expect(recorded).not.toContain('(oidc:staff-jose)');
    expect(sameActor(recorded, 'Jose Reyes (oidc:staff-jose)')).toBe(false);
  });

  it('keeps no bidirectional control, invisible or control character, and keeps letters of every script', () => {
    const recorded = personActorName(`${bidiControls.join('')}Ma${invisible.join('')}ria\u0007 Dela Cruz 李娜 Nguyễn أحمد`, 'staff-maria');
    for (const character of [...bidiControls, ...invisible, '\u0007']) expect(recorded).not.toContain(character);
    expect(recorded).toBe('Maria Dela Cruz 李娜 Nguyễn أحمد (oidc:staff-maria)');
  });

  it('is never empty, and cut to whole characters', () => {
    expect(personActorName('\u202e\u200b()', 'staff-x')).toBe('staff member (oidc:staff-x)');
    const long = personActorName('😀'.repeat(200), 'staff-x');
    expect(long.length).toBeLessThanOrEqual(128);
    expect(long).toMatch(/^(😀)+ \(oidc:staff-x\)$/u);
  });
});
