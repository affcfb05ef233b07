// The records a batch's tests write through, on a test database: the ledger, the funding record,
// the batch items record and the batch record wired as the API wires them, a credit of a partner
// user's balance (an adjustment from the treasury) for a batch to draw on, and a batch stored on it.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { batchItemRows, createBatchItemsRecord, type NewBatchItem } from '../../fundings/batch-items-record.ts';
import { createClaimedFundingsRecord } from '../../fundings/claimed-fundings-record.ts';
import { createBatchRecord } from '../../fundings/batch-record.ts';
import { createFundingRecord, type FundingRecordDependencies } from '../../fundings/funding-record.ts';
import { createLedger } from '../../ledger/ledger.ts';
import type { Database } from '../../lib/database.ts';
import { createTokenCipher, type TokenCipher } from '../../lib/token-cipher.ts';

/**
 * A batch's CODE items as the batch service makes them (keys `batch:<batchId>:<reference>`): `reference` and `code` of
 * the item's index, each of `amount` thousandths.
 */
export function codeItems(
  batchId: string,
  count: number,
  item: { reference: (index: number) => string; code: (index: number) => string; amount: bigint },
): NewBatchItem[] {
  return Array.from({ length: count }, (_, index) => {
    const reference = item.reference(index);
    const idempotencyKey = `batch:${batchId}:${reference}`;
    return {
      id: randomUUID(),
      idempotencyKey,
      workflowId: `funding-${idempotencyKey}`,
      reference,
      recipient: { type: 'CODE', code: item.code(index) },
      amount: item.amount,
    };
  });
}

/**
 * `cipher`: the one the codes are sealed with, when something else opens them (a stack's worker); a fresh key
 * otherwise.
 */
export function batchRecordsOn(
  database: Database,
  metrics?: FundingRecordDependencies['metrics'],
  cipher: TokenCipher = createTokenCipher(randomBytes(32)),
) {
  const ledger = createLedger();
  const records = { database, cipher, ledger, ...(metrics ? { metrics } : {}) };
  const fundings = createFundingRecord(records);
  const batchItems = createBatchItemsRecord(records);
  const claimed = createClaimedFundingsRecord(records);
  const batches = createBatchRecord({ database, fundings, batchItems });

  /** Credits `thousandths` to the partner user's balance, once. */
  async function credit(partnerUserId: string, thousandths: bigint): Promise<void> {
    const result = await ledger.adjust(database, {
      idempotencyKey: `credit-${randomUUID()}`,
      account: `USER:${partnerUserId}`,
      currency: 'PHP',
      amount: thousandths,
      reason: 'test credit',
      fingerprint: 'f'.repeat(64),
    });
    expect(result.kind).toBe('created');
  }

  /**
   * Stores `items` as a batch drawing on the partner user's balance (`approvalThreshold` as BATCH_APPROVAL_THRESHOLD:
   * null, never waits), made by `createdBy` (an ops key's name, or a person's recorded name).
   */
  const insertBatch = (
    batchId: string,
    partnerUserId: string,
    items: readonly NewBatchItem[],
    approvalThreshold: bigint | null,
    createdBy = 'ops',
  ) =>
    batches.insert({
      id: batchId,
      idempotencyKey: `test-batch-${batchId}`,
      requestFingerprint: '0'.repeat(64),
      workflowId: `funding-batch-${batchId}`,
      name: 'test batch',
      source: { type: 'USER_BALANCE', partnerUserId },
      currency: 'PHP',
      items: batchItemRows(items),
      createdBy,
      approvalThreshold,
    });

  return { ledger, fundings, batchItems, claimed, batches, credit, insertBatch };
}
