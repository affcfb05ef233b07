// What `walletflow dev` seeds in the partner's ledger (cli/seed-users.ts): the treasury's float from
// CAPITAL and each test user's partner balance, through the ops API, once: a restart (the same
// seeding again) posts nothing twice.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedPartnerBalances, seedTestUsers } from '../../cli/seed-users.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const seedKey = `wf_test_seed_${randomBytes(24).toString('base64url')}`;
const accountsKey = `wf_test_accounts_${randomBytes(24).toString('base64url')}`;

beforeAll(async () => {
  stack = await startPartnerStack({
    extraOpsKeys: [`walletflow-dev-seed:accounts+admin+read:${seedKey}`, `ledger-clerk:accounts+read:${accountsKey}`],
  });
});
afterAll(async () => {
  await stack?.close();
});

describe('walletflow dev seeds the partner ledger', () => {
  it('gives the treasury its float from CAPITAL and each test user a partner balance, once across restarts', async () => {
    await stack.admin.call('POST', '/reset');
    const users = await seedTestUsers(stack.sandbox.url);
    expect(users.map((user) => user.partnerUserId)).toEqual(users.map((user) => `wallet:${user.profileId}`));

    const first = await seedPartnerBalances({ apiBase: stack.apiBase, opsKey: seedKey, users });
    const again = await seedPartnerBalances({ apiBase: stack.apiBase, opsKey: seedKey, users });

    expect(Object.fromEntries(first.users)).toEqual(
      Object.fromEntries(users.map((user) => [user.partnerUserId, user.partnerBalance])),
    );
    // Seeded again (a restart): the same balances, nothing posted twice. (The treasury's own
    // available is shared with the other tests' fundings in this database: not compared.)
    expect(again.users).toEqual(first.users);
    expect(first.treasury).toMatch(/^-?\d+\.\d{2}$/);
    // The float came from CAPITAL, the users' balances from the treasury: once each.
    const adjustments = await stack.database.ledgerTransaction.findMany({
      where: { reference: { startsWith: 'adjustment:walletflow-dev:' } },
    });
    const float = adjustments.filter(
      (transaction) => transaction.reference === 'adjustment:walletflow-dev:treasury-float',
    );
    expect(float).toHaveLength(1);
    const floatEntries = await stack.database.ledgerEntry.findMany({ where: { transactionId: float[0]!.id } });
    expect(floatEntries.map((entry) => [entry.account, entry.amount.toFixed(2)]).sort()).toEqual([
      ['CAPITAL', '-100000.00'],
      ['TREASURY', '100000.00'],
    ]);
    for (const user of users) {
      expect(
        adjustments.filter(
          (transaction) => transaction.reference === `adjustment:walletflow-dev:partner-balance:${user.partnerUserId}`,
        ),
      ).toHaveLength(1);
    }
  });

  it('takes the treasury’s float only from a key with admin beside accounts: a clerk’s key adjusts a user’s account, not the treasury', async () => {
    const adjust = (account: string, idempotencyKey: string) =>
      fetch(`${stack.apiBase}/ops/accounts/${account}/adjustments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${accountsKey}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body: JSON.stringify({ amount: { currency: 'PHP', value: '5000000.00' }, reason: 'float' }),
      });
    // Before: 201, CAPITAL (no floor) to TREASURY, the float TREASURY_LIMIT bounds raised by a clerk's key alone.
    const refused = await adjust('TREASURY', `clerk-float-${Date.now()}`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'SCOPE_REQUIRED' });
    expect(
      await stack.database.ledgerTransaction.count({ where: { reference: { startsWith: 'adjustment:clerk-float-' } } }),
    ).toBe(0);
    const user = await adjust('clerk-user', `clerk-user-${Date.now()}`);
    expect(user.status).toBe(201);
  });
});
