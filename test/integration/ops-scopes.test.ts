// Named, scoped ops keys on the real stack (contract-decisions section 12): a key without the
// route's scope gets 403 SCOPE_REQUIRED and changes nothing; every audited action records the
// acting key's name (funding and payment requests, cancels, resolves, unlinks, login URLs).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { actorIdentity, actorNamedIn } from '../../domain/actor.ts';
import { waitFor } from '../support/wait-for.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { saveStandaloneLink } from '../support/standalone-link.ts';

let stack: PartnerStack;
const reader = randomBytes(32).toString('base64url');
const funder = randomBytes(32).toString('base64url');
const writer = randomBytes(32).toString('base64url');

beforeAll(async () => {
  stack = await startPartnerStack({
    extraOpsKeys: [
      `auditor:read:${reader}`,
      `treasury-bot:fund+read:${funder}`,
      `ops-writer:read+fund+pay+resolve+accounts+admin+approve:${writer}`,
    ],
  });
});
afterAll(async () => {
  await stack?.close();
});

const as = (key: string, path: string, init: RequestInit = {}) =>
  fetch(`${stack.apiBase}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  });

const fundingBody = JSON.stringify({
  recipient: { type: 'CODE', code: '1234567' },
  amount: { currency: 'PHP', value: '10.00' },
});

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
      const response = await as(reader, path, {
        method,
        headers: { 'idempotency-key': randomUUID() },
        ...(body ? { body } : {}),
      });
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
    const created = await as(funder, '/ops/fundings', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: fundingBody,
    });
    expect(created.status).toBe(202);
    const { fundingId } = (await created.json()) as { fundingId: string };
    const cancelled = await as(funder, `/ops/fundings/${fundingId}/cancel`, { method: 'POST' });
    expect([200, 409]).toContain(cancelled.status);
    const events = await stack.database.fundingEvent.findMany({ where: { fundingId }, orderBy: { id: 'asc' } });
    expect(events[0]?.detail).toBe('funding requested by ops key treasury-bot');
    if (cancelled.status === 200)
      expect(events.some((event) => event.detail === 'cancelled by ops key treasury-bot')).toBe(true);
    // The key itself is in no record.
    expect(events.map((event) => event.detail).join(' ')).not.toContain(funder);
  });

  it('records the key’s name on an unlink', async () => {
    const user = await stack.admin.createUser();
    const { linkId } = await saveStandaloneLink(stack, user, `audit-${randomUUID()}`, 60_000);
    expect((await stack.opsFetch(`/ops/links/${linkId}`, { method: 'DELETE' })).status).toBe(200);
    const unlinked = await stack.database.linkEvent.findFirstOrThrow({ where: { linkId, type: 'UNLINKED' } });
    expect(unlinked.actor).toBe('default');
  });
});

describe('whose balance a key may draw', () => {
  /** A linked wallet for a partner user with a partner balance of 100.00. */
  async function userWithBalance() {
    const { createEmbeddedLink } = await import('../support/embedded-link.ts');
    const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
    const partnerUserId = `wallet:${user.profileId}`;
    const adjusted = await stack.opsFetch(`/ops/accounts/${encodeURIComponent(partnerUserId)}/adjustments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ amount: { currency: 'PHP', value: '100.00' }, reason: 'winnings' }),
    });
    expect(adjusted.status).toBe(201);
    return { user, linkId, partnerUserId };
  }

  it('a fund key draws a user’s balance only to that user’s own wallet; to anyone else 403 SCOPE_REQUIRED, nothing stored or held', async () => {
    const owner = await userWithBalance();
    const other = await userWithBalance();
    const { code } = await stack.admin.cashInCode(other.user.userId);
    const fundingsBefore = await stack.database.funding.count();
    for (const recipient of [
      { type: 'TOKEN', linkId: other.linkId },
      { type: 'CODE', code },
    ]) {
      const response = await as(funder, '/ops/fundings', {
        method: 'POST',
        headers: { 'idempotency-key': randomUUID() },
        body: JSON.stringify({
          recipient,
          amount: { currency: 'PHP', value: '10.00' },
          source: { type: 'USER_BALANCE', partnerUserId: owner.partnerUserId },
        }),
      });
      expect(response.status, JSON.stringify(recipient)).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'SCOPE_REQUIRED' });
    }
    expect(await stack.database.funding.count()).toBe(fundingsBefore);
    const account = (await (await as(funder, `/ops/accounts/${encodeURIComponent(owner.partnerUserId)}`)).json()) as {
      available: { value: string };
    };
    expect(account.available.value).toBe('100.00');

    // To the owner's own wallet: accepted.
    const own = await as(funder, '/ops/fundings', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        recipient: { type: 'TOKEN', linkId: owner.linkId },
        amount: { currency: 'PHP', value: '10.00' },
        source: { type: 'USER_BALANCE', partnerUserId: owner.partnerUserId },
      }),
    });
    expect(own.status).toBe(202);
  });

  it('a standalone login cannot claim an embedded-app user’s wallet:{profileId}: its login URL is refused, and a standalone link stored under such an id is not that user’s wallet (403, a batch row SOURCE_NOT_RECIPIENT), nothing stored or held', async () => {
    const owner = await userWithBalance();
    // A colleague with the accounts scope mints a login URL for the embedded user's id, to link a wallet of theirs.
    const minted = await stack.opsFetch('/ops/links/login-urls', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partnerUserId: owner.partnerUserId }),
    });
    expect(minted.status).toBe(400);
    expect(await minted.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ path: 'partnerUserId' }] });
    expect(await stack.database.loginGrant.count({ where: { partnerUserId: owner.partnerUserId } })).toBe(0);
    // A standalone link under that id, of another wallet (stored before this release, or by a direct write).
    const other = await stack.admin.createUser();
    const [claimed] = await stack.database.$queryRaw<Array<{ id: string }>>`
      INSERT INTO link (id, partner_user_id, profile_id, masked_user_id, kind, scopes, status, created_at, updated_at)
      VALUES (gen_random_uuid(), ${owner.partnerUserId}, ${other.profileId}, NULL, 'STANDALONE', '{}', 'ACTIVE', now(), now())
      RETURNING id::text AS id`;
    const fundingsBefore = await stack.database.funding.count();
    const source = { type: 'USER_BALANCE', partnerUserId: owner.partnerUserId };
    const single = await as(funder, '/ops/fundings', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        recipient: { type: 'TOKEN', linkId: claimed!.id },
        amount: { currency: 'PHP', value: '10.00' },
        source,
      }),
    });
    expect(single.status).toBe(403);
    expect(await single.json()).toMatchObject({ code: 'SCOPE_REQUIRED' });
    const batch = await as(funder, '/ops/funding-batches', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        name: 'claimed id',
        source,
        items: [
          {
            reference: 'own',
            recipient: { type: 'TOKEN', linkId: owner.linkId },
            amount: { currency: 'PHP', value: '1.00' },
          },
          {
            reference: 'claimed',
            recipient: { type: 'TOKEN', linkId: claimed!.id },
            amount: { currency: 'PHP', value: '1.00' },
          },
        ],
      }),
    });
    expect(batch.status).toBe(422);
    expect(await batch.json()).toMatchObject({
      code: 'BATCH_INVALID',
      errors: [{ reference: 'claimed', code: 'SOURCE_NOT_RECIPIENT' }],
    });
    expect(await stack.database.funding.count()).toBe(fundingsBefore);
    const account = (await (await as(funder, `/ops/accounts/${encodeURIComponent(owner.partnerUserId)}`)).json()) as {
      available: { value: string };
    };
    expect(account.available.value).toBe('100.00');
  });

  it('an admin key may pay one user’s balance to another recipient', async () => {
    const owner = await userWithBalance();
    const other = await userWithBalance();
    const response = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        recipient: { type: 'TOKEN', linkId: other.linkId },
        amount: { currency: 'PHP', value: '10.00' },
        source: { type: 'USER_BALANCE', partnerUserId: owner.partnerUserId },
      }),
    });
    expect(response.status).toBe(202);
  });
});

describe('every ops write is attributed', () => {
  it('each write route of the OpenAPI document leaves the acting key’s name behind, whatever it answered', async () => {
    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };
    const writes = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/ops/'))
      .flatMap(([path, operations]) =>
        Object.keys(operations)
          .filter((method) => ['post', 'put', 'patch', 'delete'].includes(method))
          .map((method) => ({ path, method: method.toUpperCase() })),
      );
    expect(writes.length).toBeGreaterThanOrEqual(10);
    for (const { path, method } of writes) {
      const concrete = path.replace(/\{[^}]+\}/g, () => randomUUID());
      const response = await as(writer, concrete, {
        method,
        headers: { 'idempotency-key': randomUUID(), 'x-ops-actor': 'Maria at the desk' },
        ...(method === 'DELETE' ? {} : { body: '{}' }),
      });
      await response.arrayBuffer();
      // Written in the background: waited for by a deadline, as the other audit rows of this file.
      const row = await waitFor(
        `${method} ${path} audited`,
        async () =>
          // Other test files share the table (POST /ops/fundings has no id of its own): this key's row.
          (await stack.database.opsAction.findFirst({
            where: { method, path: concrete, keyName: 'ops-writer' },
            orderBy: { id: 'desc' },
          })) ?? undefined,
        15_000,
      );
      expect(row, `${method} ${path}`).toMatchObject({
        keyName: 'ops-writer',
        actor: 'Maria at the desk',
        status: response.status,
      });
    }
  });

  it('an X-Ops-Actor cannot carry another person’s identity: it is cleaned as a display name is, in the record and in the audit', async () => {
    for (const [header, note] of [
      ['x) (oidc:00u1ab', 'x oidc 00u1ab'],
      ['Maria (oidc:staff-maria)', 'Maria oidc staff-maria'],
      ['desk <oidc:00u1ab> [1]', 'desk oidc 00u1ab 1'],
    ] as const) {
      const partnerUserId = `actor-note-${randomUUID()}`;
      const adjusted = await as(writer, `/ops/accounts/${partnerUserId}/adjustments`, {
        method: 'POST',
        headers: { 'idempotency-key': randomUUID(), 'x-ops-actor': header },
        body: JSON.stringify({ amount: { currency: 'PHP', value: '1.00' }, reason: 'actor note' }),
      });
      expect(adjusted.status, header).toBe(201);
      const { adjustmentId } = (await adjusted.json()) as { adjustmentId: string };
      const { actor } = await stack.database.ledgerTransaction.findUniqueOrThrow({
        where: { id: BigInt(adjustmentId) },
      });
      expect(actor, header).toBe(`ops-writer (as ${note})`);
      // No (oidc:…) suffix a timeline or maker-checker would read as a person's identity.
      expect(actorIdentity(actor!), header).not.toMatch(/^oidc:/);
      expect(actorNamedIn(`resolved FAILED by ${actor}: a note`), header).toBe(actor);
      const row = await waitFor(
        'the adjustment audited',
        () =>
          stack.database.opsAction
            .findFirst({ where: { path: `/ops/accounts/${partnerUserId}/adjustments` } })
            .then((found) => found ?? undefined),
        15_000,
      );
      expect(row.actor, header).toBe(note);
    }
  });

  it('an adjustment’s ledger transaction and a webhook endpoint’s deletion name the key', async () => {
    const partnerUserId = `audited-${randomUUID()}`;
    const adjusted = await as(writer, `/ops/accounts/${partnerUserId}/adjustments`, {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({ amount: { currency: 'PHP', value: '5.00' }, reason: 'goodwill' }),
    });
    expect(adjusted.status).toBe(201);
    const { adjustmentId } = (await adjusted.json()) as { adjustmentId: string };
    expect(
      await stack.database.ledgerTransaction.findUniqueOrThrow({ where: { id: BigInt(adjustmentId) } }),
    ).toMatchObject({ actor: 'ops-writer' });

    const created = await as(writer, '/ops/webhooks/endpoints', {
      method: 'POST',
      body: JSON.stringify({ url: 'https://partner.example/hooks', events: ['funding.approved'] }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect((await as(writer, `/ops/webhooks/endpoints/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await stack.database.webhookEndpoint.findUniqueOrThrow({ where: { id } })).toMatchObject({
      deletedBy: 'ops-writer',
      deletedAt: expect.any(Date),
    });
  });
});
