// loginIsFresh (api/console/sign-in.ts): whether a provider's login (its auth_time) counts as made after a sign-out.
import { describe, expect, it } from 'vitest';
import { FRESH_LOGIN_TOLERANCE_SECONDS, loginIsFresh } from '../../api/console/sign-in.ts';

const T = 1_800_000_000;
const at = (seconds: number) => new Date(seconds * 1000);

describe('a fresh login after a sign-out', () => {
  it('is never the login the sign-out ended, nor one before it, however soon after and whatever the clocks', () => {
    // Logged in at T, signed out at T + 40, the provider's answer with that login at T + 60.
    expect(loginIsFresh(T, at(T + 40), (T + 60) * 1000, T)).toBe(false);
    expect(loginIsFresh(T - 5, at(T + 40), (T + 60) * 1000, T)).toBe(false);
    // Without what the sign-out ended (a session from before it was kept), the clocks' tolerance decides, as before.
    expect(loginIsFresh(T, at(T + 40), (T + 60) * 1000)).toBe(true);
  });

  it('is a later login, even by a provider whose clock is behind the database’s', () => {
    // Signed out at T + 40 (database), a new login at T + 50 by a provider 20 s behind: stamped T + 30.
    expect(loginIsFresh(T + 30, at(T + 40), (T + 55) * 1000, T)).toBe(true);
    // Older than the tolerance allows: not fresh.
    expect(loginIsFresh(T + 1, at(T + 40), (T + 2 + FRESH_LOGIN_TOLERANCE_SECONDS) * 1000, T)).toBe(false);
    expect(loginIsFresh(undefined, at(T + 40), (T + 41) * 1000, T)).toBe(false);
  });
});
