// The sandbox launcher shows each user's partner balance: the sandbox reads it over HTTP
// from walletflow's ops API (GET /ops/accounts/wallet:{profileId}) with a read-only ops key its
// settings hold. The key is never shown: not on the page, not in the settings' answer.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const readKey = `wf_test_launcher_${randomBytes(24).toString('base64url')}`;

beforeAll(async () => {
  stack = await startPartnerStack({ extraOpsKeys: [`sandbox-launcher:read:${readKey}`] });
});
afterAll(async () => {
  await stack?.close();
});

const launcherPage = async () => (await fetch(`${stack.sandbox.url}/_sandbox/launcher`)).text();

describe('the sandbox launcher’s partner balances', () => {
  it('shows each user’s partner balance, read with a read-only ops key that no page or answer shows', async () => {
    const funded = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00' });
    const unfunded = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00' });
    const adjusted = await fetch(
      `${stack.apiBase}/ops/accounts/${encodeURIComponent(`wallet:${funded.profileId}`)}/adjustments`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.opsKey}`,
          'content-type': 'application/json',
          'idempotency-key': `launcher-${randomUUID()}`,
        },
        body: JSON.stringify({ amount: { currency: 'PHP', value: '321.50' }, reason: 'launcher test' }),
      },
    );
    expect(adjusted.status, await adjusted.text()).toBe(201);

    // Not configured: no balances, and the launcher works as before.
    expect(await launcherPage()).not.toContain('partner balance');

    const settings = await stack.admin.call('PUT', '/settings', {
      partnerBalances: { accountsUrl: `${stack.apiBase}/ops/accounts/`, opsKey: readKey },
    });
    expect(settings.status).toBe(200);
    expect(JSON.stringify(settings.body)).not.toContain(readKey);
    expect(settings.body).toMatchObject({
      partnerBalances: { accountsUrl: `${stack.apiBase}/ops/accounts/`, opsKey: 'set' },
    });
    expect(JSON.stringify((await stack.admin.call('GET', '/settings')).body)).not.toContain(readKey);

    const html = await launcherPage();
    expect(html).toContain('data-partner-balance="321.50">partner balance PHP 321.50');
    expect(html).toContain('data-partner-balance="0.00">partner balance PHP 0.00');
    expect(html).not.toContain(readKey);
    expect(html).toContain(unfunded.userId);
  });

  it('says a balance is unavailable, without the key, when the partner refuses it', async () => {
    await stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00' });
    const wrongKey = `wf_test_wrong_${randomBytes(24).toString('base64url')}`;
    await stack.admin.call('PUT', '/settings', {
      partnerBalances: { accountsUrl: `${stack.apiBase}/ops/accounts/`, opsKey: wrongKey },
    });
    const html = await launcherPage();
    expect(html).toContain('partner balance unavailable: the partner answered 401');
    expect(html).not.toContain(wrongKey);
    // A malformed setting is refused and changes nothing.
    expect(
      (
        await stack.admin.call('PUT', '/settings', {
          partnerBalances: { accountsUrl: 'file:///etc/passwd', opsKey: wrongKey },
        })
      ).status,
    ).toBe(400);
    await stack.admin.call('PUT', '/settings', { partnerBalances: null });
    expect(await launcherPage()).not.toContain('partner balance');
  });
});
