// Named, scoped ops keys on the real stack (contract-decisions section 12): a key without the
// route's scope gets 403 SCOPE_REQUIRED and changes nothing; every audited action records the
// acting key's name (funding and payment requests, cancels, resolves, unlinks, login URLs).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const reader = randomBytes(32).toString('base64url');
const funder = randomBytes(32).toString('base64url');

beforeAll(async () => {
  stack = await startPartnerStack({ extraOpsKeys: [`auditor:read:${reader}`, `treasury-bot:fund+read:${funder}`] });
});
afterAll(async () => {
  await stack?.close();
});

const as = (key: string, path: string, init: RequestInit = {}) =>
  fetch(`${stack.apiBase}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });

const fundingBody = JSON.stringify({ recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '10.00' } });

describe('scoped ops keys', () => {
  it('a read-only key cannot fund, cancel, pay, resolve, unlink or mint a login URL: 403 SCOPE_REQUIRED, nothing stored', async () => {
    const id = randomUUID();
    const fundingsBefore = await stack.database.funding.count();
    const grantsBefore = await stack.database.loginGrant.count();
    for (const [method, path, body] of [
      ['POST', '/ops/fundings', fundingBody],
      ['POST', `/ops/fundings/${id}/cancel`, undefined],
      ['POST', '/ops/payments', JSON.stringify({ linkId: id, amount: { currency: 'PHP', value: '1.00' } })],
      ['POST', `/ops/payments/${id}/resolve`, JSON.stringify({ outcome: 'FAILED', note: 'x' })],
      ['DELETE', `/ops/links/${id}`, undefined],
      ['POST', '/ops/links/login-urls', JSON.stringify({ partnerUserId: 'someone' })],
    ] as const) {
      const response = await as(reader, path, { method, headers: { 'idempotency-key': randomUUID() }, ...(body ? { body } : {}) });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.headers.get('content-type')).toMatch(/problem\+json/);
      expect(await response.json()).toMatchObject({ code: 'SCOPE_REQUIRED', status: 403 });
    }
    expect(await stack.database.funding.count()).toBe(fundingsBefore);
    expect(await stack.database.loginGrant.count()).toBe(grantsBefore);
    // What it may do, it does.
    expect((await as(reader, '/ops/fundings')).status).toBe(200);
  });

  it('records the key’s name on a funding it requests and cancels', async () => {
    const created = await as(funder, '/ops/fundings', { method: 'POST', headers: { 'idempotency-key': randomUUID() }, body: fundingBody });
    expect(created.status).toBe(202);
    const { fundingId } = (await created.json()) as { fundingId: string };
    const cancelled = await as(funder, `/ops/fundings/${fundingId}/cancel`, { method: 'POST' });
    expect([200, 409]).toContain(cancelled.status);
    const events = await stack.database.fundingEvent.findMany({ where: { fundingId }, orderBy: { id: 'asc' } });
    expect(events[0]?.detail).toBe('funding requested by ops key treasury-bot');
    if (cancelled.status === 200) expect(events.some((event) => event.detail === 'cancelled by ops key treasury-bot')).toBe(true);
    // The key itself is in no record.
    expect(events.map((event) => event.detail).join(' ')).not.toContain(funder);
  });

  it('records the key’s name on an unlink', async () => {
    const user = await stack.admin.createUser();
    const tokens = await stack.admin.standaloneTokens(user.userId);
    const { saveLinkWithTokens } = await import('../../links/link-record.ts');
    const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
      partnerUserId: `audit-${randomUUID()}`,
      profileId: user.profileId,
      maskedUserId: null,
      kind: 'STANDALONE',
      scopes: [],
      requestReferenceNo: null,
      tokens: { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, accessTokenExpiresAt: new Date(Date.now() + 60_000), refreshTokenExpiresAt: null },
    });
    expect((await stack.opsFetch(`/ops/links/${linkId}`, { method: 'DELETE' })).status).toBe(200);
    const unlinked = await stack.database.linkEvent.findFirstOrThrow({ where: { linkId, type: 'UNLINKED' } });
    expect(unlinked.actor).toBe('default');
  });
});
