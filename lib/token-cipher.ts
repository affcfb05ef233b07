// Tokens at rest: AES-256-GCM under TOKEN_ENCRYPTION_KEY, a key ring: the first key encrypts, every
// key decrypts (each value names its key by id), so keys rotate without downtime and `walletflow
// rotate-keys` re-encrypts what older keys sealed. Each value gets a fresh 96-bit nonce and is bound
// (as associated data) to its row and column, so a ciphertext copied to another link or field fails
// to decrypt instead of handing out the wrong user's token.
import { createCipheriv, createDecipheriv, createHash, createSecretKey, hkdfSync, randomBytes } from 'node:crypto';

const FORMAT_VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class TokenCipherError extends Error {
  readonly code = 'TOKEN_DECRYPTION_FAILED';
}

export interface TokenCipher {
  /** The encrypting key's id: the first 8 hex digits of SHA-256(key), stored with every value. */
  readonly keyId: string;
  encrypt(plaintext: string, context: string): Uint8Array<ArrayBuffer>;
  decrypt(sealed: Uint8Array, context: string): string;
  /** true when `sealed` was encrypted under another key than the first (rotate-keys re-encrypts it). */
  isStale(sealed: Uint8Array): boolean;
}

const keyIdOf = (key: Buffer) => createHash('sha256').update(key).digest().subarray(0, 4);

/** `keys`: the ring, newest first (one key is a ring of one). */
export function createTokenCipher(keys: Buffer | readonly Buffer[]): TokenCipher {
  const ring = Buffer.isBuffer(keys) ? [keys] : [...keys];
  const [key] = ring;
  if (!key || ring.some((each) => each.length !== 32))
    throw new RangeError('TOKEN_ENCRYPTION_KEY must be 32-byte keys');
  const keyIdBytes = keyIdOf(key);
  const keyId = keyIdBytes.toString('hex');
  // Imported once as key objects: a raw Buffer key is imported again on every cipher (the session
  // URL seals two tokens per call).
  const encryptKey = createSecretKey(key);
  const decryptKeys = new Map(ring.map((each) => [keyIdOf(each).toString('hex'), createSecretKey(each)] as const));
  return {
    keyId,
    isStale(sealed) {
      return !Buffer.from(sealed)
        .subarray(1, 1 + keyIdBytes.length)
        .equals(keyIdBytes);
    },
    encrypt(plaintext, context) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', encryptKey, nonce);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const sealed = Buffer.concat([Buffer.from([FORMAT_VERSION]), keyIdBytes, nonce, cipher.getAuthTag(), body]);
      return new Uint8Array(sealed.buffer.slice(sealed.byteOffset, sealed.byteOffset + sealed.byteLength));
    },
    decrypt(sealed, context) {
      const data = Buffer.from(sealed);
      const header = 1 + keyIdBytes.length;
      if (data.length < header + NONCE_BYTES + TAG_BYTES || data[0] !== FORMAT_VERSION) {
        throw new TokenCipherError('stored token has an unknown format');
      }
      const sealedWith = decryptKeys.get(data.subarray(1, header).toString('hex'));
      if (!sealedWith)
        throw new TokenCipherError('stored token was encrypted under another key (not in TOKEN_ENCRYPTION_KEY)');
      const nonce = data.subarray(header, header + NONCE_BYTES);
      const tag = data.subarray(header + NONCE_BYTES, header + NONCE_BYTES + TAG_BYTES);
      const body = data.subarray(header + NONCE_BYTES + TAG_BYTES);
      try {
        const decipher = createDecipheriv('aes-256-gcm', sealedWith, nonce);
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
      } catch {
        throw new TokenCipherError('stored token failed authentication');
      }
    },
  };
}

/**
 * A key for another purpose derived from a key (HKDF-SHA256). Idempotency fingerprints have their own key
 * (IDEMPOTENCY_FINGERPRINT_KEY).
 */
export function deriveSubkey(key: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `walletflow:${purpose}`, 32));
}
