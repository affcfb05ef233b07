// A login token read before any statement (links/login-grants.ts readLoginToken): what names no
// grant is refused there, so a forged or garbled token costs /connect/start no transaction.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readLoginToken } from '../../links/login-grants.ts';

describe('a login token read without the database', () => {
  it('takes an ops-minted token by its shape (32 random bytes, base64url) and refuses any other non-JWT string', async () => {
    const minted = randomBytes(32).toString('base64url');
    expect(await readLoginToken(minted, { signingKey: undefined })).toMatchObject({ kind: 'minted' });
    // Found by a third read: any printable string was taken as minted, and opened a transaction to find no row.
    for (const garbled of ['not-a-token', `${minted}x`, minted.slice(1), `${minted.slice(1)}!`])
      expect(await readLoginToken(garbled, { signingKey: undefined }), garbled).toEqual({
        kind: 'refused',
        refusal: { ok: false, reason: 'invalid' },
      });
  });
});
