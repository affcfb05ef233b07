// Reads the profile `data` of GET /profile: a compact JWE (RSA-OAEP, A256GCM, zip DEF) around a
// compact HS256 JWS whose payload is the profile. Algorithms allow-listed, inflation bounded.
import { createPrivateKey, createSecretKey } from 'node:crypto';
import type { JsonWebKey, KeyObject } from 'node:crypto';
import { compactDecrypt, compactVerify, decodeProtectedHeader, errors as joseErrors } from 'jose';
import type { ProfileDecryptionJwk, ProfileVerificationJwk } from '../domain/jwk.ts';
import type { Profile } from './profile-schema.ts';
import { profileSchema } from './profile-schema.ts';

export type ProfileErrorCode =
  'PROFILE_DECRYPTION_FAILED' | 'PROFILE_SIGNATURE_INVALID' | 'PROFILE_TOO_LARGE' | 'PROFILE_INVALID';

/** Messages name the step that failed, never the data. */
export class ProfileError extends Error {
  override readonly name = 'ProfileError';
  constructor(
    readonly code: ProfileErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A profile is a few kilobytes; the bound stops a decompression bomb. */
export const MAX_PROFILE_BYTES = 256 * 1024;
/** Encrypted form: base64url of at most the bound, plus the header and key. */
const MAX_JWE_CHARS = 2 * MAX_PROFILE_BYTES;

const allowedHeader = { alg: 'RSA-OAEP', enc: 'A256GCM' } as const;

export interface ProfileKeys {
  decryptionJwk: ProfileDecryptionJwk;
  verificationJwk: ProfileVerificationJwk;
}

export interface ProfileReader {
  read(data: string): Promise<Profile>;
}

export function createProfileReader(keys: ProfileKeys, maxProfileBytes = MAX_PROFILE_BYTES): ProfileReader {
  const decryptionKey = importDecryptionKey(keys.decryptionJwk);
  const verificationKey = createSecretKey(Buffer.from(keys.verificationJwk.k, 'base64url'));
  return {
    async read(data) {
      const jws = await decryptProfileJwe(data, decryptionKey, maxProfileBytes);
      const payload = await verifyProfileJws(jws, verificationKey);
      return parseProfile(payload);
    },
  };
}

/**
 * Only the RSA members are imported: the interface calls the key "RS512", and an `alg`, `use`
 * or `key_ops` for signing would otherwise forbid decryption with it.
 */
function importDecryptionKey(jwk: ProfileDecryptionJwk): KeyObject {
  const { kty, n, e, d, p, q, dp, dq, qi } = jwk;
  const members: JsonWebKey = { kty, n, e, d, p, q, dp, dq, qi };
  return createPrivateKey({ key: members, format: 'jwk' });
}

async function decryptProfileJwe(data: string, key: KeyObject, maxProfileBytes: number): Promise<string> {
  if (data.length > MAX_JWE_CHARS) throw new ProfileError('PROFILE_TOO_LARGE', 'profile JWE exceeds the size bound');
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(data);
  } catch {
    throw new ProfileError('PROFILE_DECRYPTION_FAILED', 'profile data is not a compact JWE');
  }
  if (header.alg !== allowedHeader.alg || header.enc !== allowedHeader.enc) {
    throw new ProfileError('PROFILE_DECRYPTION_FAILED', 'profile JWE uses an algorithm that is not allowed');
  }
  // DEF is the contract's; an uncompressed JWE is accepted as harmless.
  if (header.zip !== undefined && header.zip !== 'DEF') {
    throw new ProfileError('PROFILE_DECRYPTION_FAILED', 'profile JWE uses a compression that is not allowed');
  }
  try {
    const { plaintext } = await compactDecrypt(data, key, {
      keyManagementAlgorithms: [allowedHeader.alg],
      contentEncryptionAlgorithms: [allowedHeader.enc],
      maxDecompressedLength: maxProfileBytes,
    });
    if (plaintext.byteLength > maxProfileBytes)
      throw new ProfileError('PROFILE_TOO_LARGE', 'profile exceeds the size bound');
    return new TextDecoder('utf-8', { fatal: true }).decode(plaintext);
  } catch (error) {
    if (error instanceof ProfileError) throw error;
    // jose reports the inflation bound as JWEInvalid with this message (a unit test pins it).
    if (error instanceof joseErrors.JWEInvalid && /exceeded the configured limit/.test(error.message)) {
      throw new ProfileError('PROFILE_TOO_LARGE', 'decompressed profile exceeds the size bound');
    }
    throw new ProfileError('PROFILE_DECRYPTION_FAILED', 'profile JWE could not be decrypted');
  }
}

async function verifyProfileJws(jws: string, key: KeyObject): Promise<Uint8Array> {
  try {
    const { payload } = await compactVerify(jws, key, { algorithms: ['HS256'] });
    return payload;
  } catch {
    throw new ProfileError(
      'PROFILE_SIGNATURE_INVALID',
      'profile JWS signature is not valid HS256 with the partner key',
    );
  }
}

function parseProfile(payload: Uint8Array): Profile {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    throw new ProfileError('PROFILE_INVALID', 'profile payload is not JSON');
  }
  const parsed = profileSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(profile)'))];
    throw new ProfileError(
      'PROFILE_INVALID',
      `profile does not match the interface at ${fields.slice(0, 5).join(', ')}`,
    );
  }
  return parsed.data;
}
