// Temporal payload encryption on: a funding runs as usual, and its history in Temporal holds only
// ciphertext payloads (not even the funding id), readable again through the codec endpoint the
// Temporal UI calls, over real HTTP.
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { createCodecApp, type JsonPayload } from '../../stack/codec-endpoint.ts';
import { AesGcmPayloadCodec, type PayloadKey } from '../../lib/payload-codec.ts';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { FundingView } from '../../domain/funding.ts';
import { readableHistory } from '../support/replay-histories.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const keys: PayloadKey[] = [{ id: 'test-2026-11', key: randomBytes(32) }];

beforeAll(async () => {
  stack = await startPartnerStack({ payloadKeys: keys });
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

describe('payload encryption', () => {
  it('keeps workflow payloads encrypted in Temporal while fundings run as usual', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const response = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '9.00' } }),
    });
    const { fundingId } = (await response.json()) as FundingView;
    const row = await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId } });
    const result = (await stack.temporal.workflow.getHandle(row.workflowId).result()) as {
      status: string;
      fundingId: string;
    };
    expect(result).toMatchObject({ status: 'APPROVED', fundingId });

    const history = JSON.parse(
      historyToJSON(await stack.temporal.workflow.getHandle(row.workflowId).fetchHistory()),
    ) as unknown;
    const readable = readableHistory(history);
    expect(readable).toContain('binary/encrypted');
    expect(readable).toContain('test-2026-11');
    // Payloads are sealed; search attributes stay readable (they are indexes, and hold states only).
    expect(readable).not.toContain(fundingId);
    expect(readable).not.toContain('"transferId"');

    // The codec endpoint turns the stored input back into the workflow's arguments.
    const started = (
      history as { events: { workflowExecutionStartedEventAttributes?: { input: { payloads: JsonPayload[] } } }[] }
    ).events[0];
    const sealed = started?.workflowExecutionStartedEventAttributes?.input.payloads ?? [];
    expect(sealed.length).toBeGreaterThan(0);
    const bearer = randomBytes(24).toString('base64url');
    const auth = { authorization: `Bearer ${bearer}` };
    const server = createCodecApp({
      codec: new AesGcmPayloadCodec(keys),
      allowedOrigins: ['http://localhost:8233'],
      bearerToken: bearer,
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const preflight = await fetch(`${endpoint}/default/decode`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://localhost:8233',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
      expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/);

      const decoded = await fetch(`${endpoint}/default/decode`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          origin: 'http://localhost:8233',
          'x-namespace': 'default',
          ...auth,
        },
        body: JSON.stringify({ payloads: sealed }),
      });
      expect(decoded.status).toBe(200);
      const { payloads } = (await decoded.json()) as { payloads: JsonPayload[] };
      const inputs = payloads.map((payload) =>
        defaultPayloadConverter.fromPayload({
          metadata: Object.fromEntries(
            Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
          ),
          data: Buffer.from(payload.data ?? '', 'base64'),
        }),
      );
      expect(inputs).toEqual([expect.objectContaining({ fundingId })]);

      // Without the bearer token, or with another: nothing is decrypted.
      for (const headers of [{}, { authorization: `Bearer ${bearer}x` }, { authorization: bearer }] as Array<
        Record<string, string>
      >) {
        const refused = await fetch(`${endpoint}/default/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: 'http://localhost:8233', ...headers },
          body: JSON.stringify({ payloads: sealed }),
        });
        expect(refused.status).toBe(401);
        expect(await refused.text()).not.toContain(fundingId);
      }

      // Another page's origin, a body that is not payloads, or a payload under an unknown key: refused.
      const foreign = await fetch(`${endpoint}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
        body: JSON.stringify({ payloads: sealed }),
      });
      expect(foreign.status).toBe(403);
      expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
      const malformed = await fetch(`${endpoint}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ payloads: 'x' }),
      });
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { code: string }).code).toBe('INVALID_PAYLOADS');
      const otherKey = await new AesGcmPayloadCodec([{ id: 'elsewhere', key: randomBytes(32) }]).encode([
        defaultPayloadConverter.toPayload('x'),
      ]);
      const unknownKey = await fetch(`${endpoint}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({
          payloads: otherKey.map((payload) => ({
            metadata: Object.fromEntries(
              Object.entries(payload.metadata ?? {}).map(([key, value]) => [
                key,
                Buffer.from(value!).toString('base64'),
              ]),
            ),
            data: Buffer.from(payload.data!).toString('base64'),
          })),
        }),
      });
      expect(unknownKey.status).toBe(422);
      expect(((await unknownKey.json()) as { code: string }).code).toBe('PAYLOAD_DECRYPTION_FAILED');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
