// Temporal payload encryption on: a funding runs as usual, and its history in Temporal holds only
// ciphertext payloads (not even the funding id), readable again through the codec.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { FundingView } from '../../domain/funding.ts';
import { readableHistory } from '../support/replay-histories.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack({ payloadKeys: [{ id: 'test-2026-11', key: randomBytes(32) }] });
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
    const result = (await stack.temporal.workflow.getHandle(row.workflowId).result()) as { status: string; fundingId: string };
    expect(result).toMatchObject({ status: 'APPROVED', fundingId });

    const history = JSON.parse(historyToJSON(await stack.temporal.workflow.getHandle(row.workflowId).fetchHistory())) as unknown;
    const readable = readableHistory(history);
    expect(readable).toContain('binary/encrypted');
    expect(readable).toContain('test-2026-11');
    // Payloads are sealed; search attributes stay readable (they are indexes, and hold states only).
    expect(readable).not.toContain(fundingId);
    expect(readable).not.toContain('"transferId"');
  });
});
