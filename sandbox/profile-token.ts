// The profile's wire form: a compact JWS (HS256, the partner's secret key) inside a compact JWE
// (RSA-OAEP, A256GCM, zip DEF) encrypted to the partner's RSA public key (interface, endpoint 9).
import type { KeyObject } from 'node:crypto';
import { CompactEncrypt, CompactSign, importJWK, type CryptoKey, type JWK } from 'jose';

export interface ProfileSealer {
  seal(profile: Record<string, unknown>): Promise<string>;
}

export function createProfileSealer(encryptionKey: KeyObject, verificationJwk: Record<string, unknown>): ProfileSealer {
  // Imported once and reused; imports are asynchronous in jose.
  let keys: Promise<{ encryption: CryptoKey; signing: CryptoKey | Uint8Array }> | undefined;
  const loadKeys = () => {
    keys ??= (async () => ({
      encryption: (await importJWK(encryptionKey.export({ format: 'jwk' }) as JWK, 'RSA-OAEP')) as CryptoKey,
      signing: await importJWK({ kty: 'oct', k: String(verificationJwk.k) }, 'HS256'),
    }))();
    return keys;
  };
  return {
    async seal(profile) {
      const { encryption, signing } = await loadKeys();
      const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(profile)))
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .sign(signing);
      return new CompactEncrypt(new TextEncoder().encode(jws))
        .setProtectedHeader({ alg: 'RSA-OAEP', enc: 'A256GCM', zip: 'DEF', cty: 'JWT' })
        .encrypt(encryption);
    },
  };
}
