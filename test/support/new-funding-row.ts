// A funding as the API hands it to the funding record's insert, for tests that store fundings without the API: a fresh
// id, an idempotency key and a workflow id named after the test (`prefix`), a cash-in code recipient and 10.00 PHP,
// unless `over` says otherwise.
import { randomUUID } from 'node:crypto';
import { moneyOf } from '../../domain/money.ts';
import type { NewFunding } from '../../fundings/funding-record.ts';

export function newFundingRow(prefix: string, over: Partial<NewFunding> = {}): NewFunding {
  const id = over.id ?? randomUUID();
  return {
    id,
    idempotencyKey: `${prefix}-${id}`,
    requestFingerprint: '0'.repeat(64),
    workflowId: `funding-${prefix}-${id}`,
    recipient: { type: 'CODE', code: '1234567' },
    amount: moneyOf({ currency: 'PHP', value: '10.00' }),
    ...over,
  };
}
