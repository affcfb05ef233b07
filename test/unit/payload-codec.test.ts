// lib/payload-codec.ts: payloads round-trip, hold no plaintext, rotate keys, refuse tampering.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, parsePayloadKeys, PayloadCodecError } from '../../lib/payload-codec.ts';

const key = (id: string) => ({ id, key: randomBytes(32) });

describe('payload codec', () => {
  const payload = defaultPayloadConverter.toPayload({ fundingId: 'f-123', status: 'APPROVED' });

  it('round-trips and leaves no plaintext', async () => {
    const codec = new AesGcmPayloadCodec([key('k1')]);
    const [encoded] = await codec.encode([payload]);
    expect(Buffer.from(encoded!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    expect(Buffer.from(encoded!.metadata!['encryption-key-id']!).toString()).toBe('k1');
    expect(Buffer.from(encoded!.data!).includes(Buffer.from('f-123'))).toBe(false);
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ fundingId: 'f-123', status: 'APPROVED' });
  });

  it('rotates: the new key encrypts, the old one still decrypts', async () => {
    const oldKey = key('2026-01');
    const newKey = key('2026-11');
    const [sealedOld] = await new AesGcmPayloadCodec([oldKey]).encode([payload]);
    const rotated = new AesGcmPayloadCodec([newKey, oldKey]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([sealedOld!]))[0]!)).toEqual({
      fundingId: 'f-123',
      status: 'APPROVED',
    });
    const [sealedNew] = await rotated.encode([payload]);
    expect(Buffer.from(sealedNew!.metadata!['encryption-key-id']!).toString()).toBe('2026-11');
    await expect(new AesGcmPayloadCodec([oldKey]).decode([sealedNew!])).rejects.toThrow(PayloadCodecError);
  });

  it('passes unencrypted payloads through and refuses tampering', async () => {
    const codec = new AesGcmPayloadCodec([key('k1')]);
    expect(await codec.decode([payload])).toEqual([payload]);
    const [sealed] = await codec.encode([payload]);
    const data = Buffer.from(sealed!.data!);
    data[data.length - 1] = (data[data.length - 1] ?? 0) ^ 1;
    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow(/failed authentication/);
  });

  it('parses key lists and refuses bad ones', () => {
    const material = randomBytes(32).toString('base64');
    expect(parsePayloadKeys(`a:${material}, b:${material}`).map((entry) => entry.id)).toEqual(['a', 'b']);
    expect(() => parsePayloadKeys('a:short')).toThrow(RangeError);
    expect(() => parsePayloadKeys(`bad id:${material}`)).toThrow(RangeError);
  });
});
