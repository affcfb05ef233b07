// Builds profile `data` the way the wallet service does (compact JWE RSA-OAEP / A256GCM / zip DEF
// around an HS256 JWS), with node:crypto, so the client's decryption is checked independently.
import { constants, createCipheriv, generateKeyPairSync, publicEncrypt, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { CompactSign } from 'jose';

export interface ProfileTestKeys {
  publicKey: KeyObject;
  decryptionJwk: { kty: 'RSA'; n: string; e: string; d: string; [member: string]: unknown };
  verificationJwk: { kty: 'oct'; k: string };
  secret: Uint8Array;
}

export function generateProfileTestKeys(): ProfileTestKeys {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  const secret = randomBytes(32);
  return {
    publicKey,
    // The interface's sample names the key RS512: the client must decrypt with it anyway.
    decryptionJwk: { ...jwk, kty: 'RSA', n: jwk.n ?? '', e: jwk.e ?? '', d: jwk.d ?? '', alg: 'RS512', use: 'sig' },
    verificationJwk: { kty: 'oct', k: Buffer.from(secret).toString('base64url') },
    secret,
  };
}

export async function signProfile(payload: unknown, secret: Uint8Array, alg = 'HS256'): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader({ alg }).sign(secret);
}

export interface JweOptions {
  header?: Record<string, unknown>;
  /** Deflate the plaintext (default: when the header says zip DEF). */
  compress?: boolean;
}

export function encryptProfileJwe(plaintext: string | Buffer, publicKey: KeyObject, options: JweOptions = {}): string {
  const header = options.header ?? { alg: 'RSA-OAEP', enc: 'A256GCM', zip: 'DEF' };
  const encodedHeader = Buffer.from(JSON.stringify(header)).toString('base64url');
  const cek = randomBytes(32);
  // RSA-OAEP in RFC 7518 is OAEP with SHA-1 and MGF1-SHA-1.
  const encryptedKey = publicEncrypt(
    { key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' },
    cek,
  );
  const iv = randomBytes(12);
  const compress = options.compress ?? header.zip === 'DEF';
  const content = compress ? deflateRawSync(plaintext) : Buffer.from(plaintext);
  const cipher = createCipheriv('aes-256-gcm', cek, iv);
  cipher.setAAD(Buffer.from(encodedHeader, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(content), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [encodedHeader, encryptedKey, iv, ciphertext, tag]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}
