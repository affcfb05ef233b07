// Temporal payload encryption: every payload walletflow sends to Temporal (workflow inputs and
// results, activity arguments and results, queries, updates) is sealed with AES-256-GCM under a
// key id, so Temporal's database holds ciphertext. Keys rotate: the first key encrypts, every
// configured key decrypts. Payloads without the encrypted marker pass through (older histories).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface PayloadKey {
  id: string;
  key: Buffer;
}

export class PayloadCodecError extends Error {
  readonly code = 'PAYLOAD_DECRYPTION_FAILED';
}

/** Parses `id:base64key,id2:base64key2` (the first is the active key). */
export function parsePayloadKeys(value: string): PayloadKey[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item) => {
      const [id, material, ...rest] = item.split(':');
      const key = Buffer.from(material ?? '', 'base64');
      if (!id || !/^[A-Za-z0-9._-]{1,64}$/.test(id) || rest.length > 0 || key.length !== 32) {
        throw new RangeError('each key must be <id>:<32 bytes in base64>, ids of letters, digits, . _ -');
      }
      return { id, key };
    });
}

const utf8 = (text: string) => new TextEncoder().encode(text);

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;
  private readonly active: PayloadKey;

  constructor(keys: PayloadKey[]) {
    const [active] = keys;
    if (!active) throw new RangeError('at least one payload key is needed');
    this.active = active;
    this.keys = new Map(keys.map((entry) => [entry.id, entry.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.active.key, nonce);
      cipher.setAAD(Buffer.from(this.active.id));
      const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
      return {
        metadata: { encoding: utf8(ENCODING), [KEY_ID]: utf8(this.active.id) },
        data: Buffer.concat([nonce, cipher.getAuthTag(), sealed]),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding ? Buffer.from(payload.metadata.encoding).toString() : '';
      if (encoding !== ENCODING) return payload;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID] ?? new Uint8Array()).toString();
      const key = this.keys.get(keyId);
      if (!key) throw new PayloadCodecError(`no payload key with id ${keyId}`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
        decipher.setAAD(Buffer.from(keyId));
        decipher.setAuthTag(data.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
        const plain = Buffer.concat([decipher.update(data.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]);
        return temporal.api.common.v1.Payload.decode(plain);
      } catch {
        throw new PayloadCodecError(`payload failed authentication under key ${keyId}`);
      }
    });
  }
}

/** The data converter for Client and Worker: encryption when keys are configured, else Temporal's default. */
export function dataConverterFor(keys: PayloadKey[] | undefined): { payloadCodecs: PayloadCodec[] } | undefined {
  return keys && keys.length > 0 ? { payloadCodecs: [new AesGcmPayloadCodec(keys)] } : undefined;
}
