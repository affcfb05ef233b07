// Synchronous compact JWS (HS256) and JWE (dir, A256GCM) for the sandbox's own tokens. They are
// built with node:crypto rather than jose because jose is asynchronous: synchronous issuing lets
// a handler check and change state with no await in between, so concurrent calls cannot race.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function signHs256(payload: Record<string, unknown>, key: Buffer): string {
  const input = `${encodeJson({ alg: 'HS256', typ: 'JWT' })}.${encodeJson(payload)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

/** The payload of a valid HS256 JWS, or null; expiry is the caller's business. */
export function verifyHs256(token: string, key: Buffer): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header = '', payload = '', signature = ''] = parts;
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const parsedHeader = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
    if (parsedHeader.alg !== 'HS256') return null;
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A compact JWE only the sandbox can read (the partner "cannot and need not"). */
export function encryptDirA256Gcm(payload: Record<string, unknown>, key: Buffer): string {
  const header = encodeJson({ alg: 'dir', enc: 'A256GCM', typ: 'JWT', cty: 'JWT' });
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(header, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return [
    header,
    '',
    iv.toString('base64url'),
    ciphertext.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
  ].join('.');
}

export function decryptDirA256Gcm(token: string, key: Buffer): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 5) return null;
  const [header = '', , iv = '', ciphertext = '', tag = ''] = parts;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(header, 'ascii'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    const parsed: unknown = JSON.parse(plaintext.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function opaqueToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
