// lib/token-cipher.ts: tokens round-trip, never appear in the stored bytes, and refuse to open
// under another key or bound to another row.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTokenCipher, TokenCipherError } from '../../lib/token-cipher.ts';

describe('token cipher', () => {
  const cipher = createTokenCipher(randomBytes(32));
  const token = 'eyJhbGciOiJIUzI1NiJ9.user-access-token.signature';

  it('round-trips and hides the token text', () => {
    const sealed = cipher.encrypt(token, 'link-1:access');
    expect(Buffer.from(sealed).includes(Buffer.from(token))).toBe(false);
    expect(Buffer.from(sealed).includes(Buffer.from('user-access-token'))).toBe(false);
    expect(cipher.decrypt(sealed, 'link-1:access')).toBe(token);
  });

  it('uses a fresh nonce for every value', () => {
    expect(Buffer.from(cipher.encrypt(token, 'c')).equals(Buffer.from(cipher.encrypt(token, 'c')))).toBe(false);
  });

  it('refuses another row or column, another key, and tampering', () => {
    const sealed = cipher.encrypt(token, 'link-1:access');
    expect(() => cipher.decrypt(sealed, 'link-2:access')).toThrow(TokenCipherError);
    expect(() => cipher.decrypt(sealed, 'link-1:refresh')).toThrow(TokenCipherError);
    expect(() => createTokenCipher(randomBytes(32)).decrypt(sealed, 'link-1:access')).toThrow(/another key/);
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;
    expect(() => cipher.decrypt(tampered, 'link-1:access')).toThrow(TokenCipherError);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => createTokenCipher(randomBytes(16))).toThrow(RangeError);
  });
});

describe('token cipher key ring', () => {
  const token = 'eyJhbGciOiJIUzI1NiJ9.user-access-token.signature';
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];

  it('decrypts under every key of the ring and encrypts under the first', () => {
    const sealedOld = createTokenCipher(oldKey).encrypt(token, 'link-1:access');
    const ring = createTokenCipher([newKey, oldKey]);
    expect(ring.decrypt(sealedOld, 'link-1:access')).toBe(token);
    expect(ring.isStale(sealedOld)).toBe(true);
    const sealedNew = ring.encrypt(token, 'link-1:access');
    expect(ring.isStale(sealedNew)).toBe(false);
    expect(createTokenCipher(newKey).decrypt(sealedNew, 'link-1:access')).toBe(token);
    // Once the old key leaves the ring, what it sealed no longer opens.
    expect(() => createTokenCipher(newKey).decrypt(sealedOld, 'link-1:access')).toThrow(TokenCipherError);
  });
});
