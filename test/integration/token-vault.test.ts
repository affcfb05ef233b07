// The token vault against the sandbox and PostgreSQL: refresh ahead of expiry, exactly one
// refresh for many concurrent callers (across vault instances, as across workers), the forced
// refresh on a 401, and REAUTH_REQUIRED when the refresh token is refused. The lock lives on the
// vault's own pool (no main-pool connection waits for another), a refresh its line cannot take is
// not sent, and a rotated pair is saved until it lands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletCallLog } from '../../audit/wallet-call-log.ts';
import { createAdmissionGate } from '../../lib/admission.ts';
import { createDatabase } from '../../lib/database.ts';
import { createLogger } from '../../lib/logger.ts';
import {
  refreshLockTimeoutMs,
  TokenRefreshBusy,
  TokenRefreshError,
  VaultError,
  type TokenVault,
  type UserToken,
} from '../../links/token-vault.ts';
import { saveLinkWithTokens } from '../../links/link-record.ts';
import { STANDALONE_REFRESH_LIFETIME_MS } from '../../links/token-expiry.ts';
import { isWalletError } from '../../wallet/index.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
const silent = createLogger({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** walletflow's clock follows the sandbox clock, which the tests advance. */
let clockOffsetMs = 0;
const now = () => Date.now() + clockOffsetMs;

beforeAll(async () => {
  stack = await startPartnerStack();
});
afterAll(async () => {
  await stack.close();
});

async function advance(seconds: number) {
  await stack.admin.advanceClock(seconds);
  clockOffsetMs += seconds * 1000;
}

async function embeddedLink() {
  return createEmbeddedLink(stack, {});
}

async function standaloneLink() {
  const user = await stack.admin.createUser();
  const issued = await stack.admin.standaloneTokens(user.userId);
  const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
    partnerUserId: `standalone-${user.userId}`,
    profileId: user.profileId,
    maskedUserId: null,
    kind: 'STANDALONE',
    scopes: ['openid'],
    requestReferenceNo: null,
    tokens: {
      accessToken: issued.access_token,
      refreshToken: issued.refresh_token,
      accessTokenExpiresAt: new Date(now() + Number(issued.expires_in) * 1000),
      refreshTokenExpiresAt: new Date(now() + STANDALONE_REFRESH_LIFETIME_MS),
    },
  });
  return { user, linkId, issued };
}

const refreshesOf = async (userId: string) =>
  (await stack.admin.ledger()).refreshes.filter((refresh) => refresh.userId === userId);

/** 20 callers spread over 4 vaults (4 "workers"), all at once. */
async function twentyConcurrentCalls(vaults: TokenVault[], linkId: string) {
  return Promise.all(Array.from({ length: 20 }, (_, index) => vaults[index % vaults.length]!.getAccessToken(linkId)));
}

describe('token vault', () => {
  it('hands out the stored token while it is fresh, without a refresh', async () => {
    const { user, linkId, issued } = await embeddedLink();
    const vault = stack.createVault({ now });
    expect((await vault.getAccessToken(linkId)).accessToken).toBe(issued.accessToken);
    expect(await refreshesOf(user.userId)).toHaveLength(0);
  });

  it('embedded: 20 concurrent calls at expiry make exactly one refresh, and all get the new valid token', async () => {
    const { user, linkId, issued } = await embeddedLink();
    await advance(600);
    const vaults = Array.from({ length: 4 }, () => stack.createVault({ now }));
    const tokens = await twentyConcurrentCalls(vaults, linkId);
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    const distinct = new Set(tokens.map((token) => token.accessToken));
    expect(distinct.size).toBe(1);
    expect(tokens[0]!.accessToken).not.toBe(issued.accessToken);
    expect(tokens.every((token) => token.version === 2)).toBe(true);
    const profile = await stack.wallet.getProfile(tokens[0]!.accessToken);
    expect(profile.data.profileId).toBe(user.profileId);
    const events = await stack.database.linkEvent.findMany({ where: { linkId, type: 'TOKEN_REFRESHED' } });
    expect(events).toHaveLength(1);
    expect(events[0]?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('standalone: 20 concurrent calls at expiry make exactly one refresh, and all get the new valid token', async () => {
    const { user, linkId, issued } = await standaloneLink();
    await advance(3600);
    const vaults = Array.from({ length: 4 }, () => stack.createVault({ now }));
    const tokens = await twentyConcurrentCalls(vaults, linkId);
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    expect(new Set(tokens.map((token) => token.accessToken)).size).toBe(1);
    expect(tokens[0]!.accessToken).not.toBe(issued.access_token);
    const profile = await stack.wallet.getProfile(tokens[0]!.accessToken);
    expect(profile.data.profileId).toBe(user.profileId);
  });

  it('a 401 for the user token forces one refresh and one retry', async () => {
    const { user, linkId, issued } = await embeddedLink();
    const vault = stack.createVault({ now });
    let attempts = 0;
    const profileId = await vault.withUserToken(linkId, async (token) => {
      attempts += 1;
      // The first attempt uses a token the wallet refuses, as after an early revocation.
      const result = await stack.wallet.getProfile(attempts === 1 ? `${token}broken` : token);
      return result.data.profileId;
    });
    expect(profileId).toBe(user.profileId);
    expect(attempts).toBe(2);
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    expect((await stack.tokens.read(stack.database, linkId))?.accessToken).not.toBe(issued.accessToken);
  });

  it('a second 401 after the forced refresh is the caller’s error, not a loop', async () => {
    const { linkId } = await embeddedLink();
    const vault = stack.createVault({ now });
    let attempts = 0;
    const failure = await vault
      .withUserToken(linkId, async (token) => {
        attempts += 1;
        return stack.wallet.getProfile(`${token}broken`);
      })
      .catch((error: unknown) => error);
    expect(attempts).toBe(2);
    expect(isWalletError(failure) && failure.code).toBe('USER_TOKEN_INVALID');
  });

  it('an expired embedded refresh token marks the link REAUTH_REQUIRED with a typed error', async () => {
    const { linkId } = await embeddedLink();
    await advance(1300);
    const vault = stack.createVault({ now });
    const failure = await vault.getAccessToken(linkId).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(VaultError);
    expect((failure as VaultError).code).toBe('REAUTH_REQUIRED');
    expect((failure as Error).message).not.toMatch(/ey[A-Za-z0-9_-]{20,}/);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('REAUTH_REQUIRED');
    // Later calls fail at once, without asking the wallet.
    await expect(vault.getAccessToken(linkId)).rejects.toMatchObject({ code: 'REAUTH_REQUIRED' });
  });

  it('a refused standalone refresh marks the link REAUTH_REQUIRED', async () => {
    const { linkId } = await standaloneLink();
    // Past the refresh token's 604800 s at the sandbox, while walletflow still thinks it valid.
    await stack.admin.advanceClock(604_800 + 60);
    const vault = stack.createVault({ now: () => Date.now() + clockOffsetMs + 3_600_000 });
    await expect(vault.getAccessToken(linkId)).rejects.toMatchObject({ code: 'REAUTH_REQUIRED' });
    const event = await stack.database.linkEvent.findFirst({ where: { linkId, type: 'REAUTH_REQUIRED' } });
    expect(event?.detail).toContain('invalid_grant');
    clockOffsetMs += (604_800 + 60) * 1000;
  });

  it('REFRESH_TOKEN_INVALID under another status than the service’s 400 (a gateway’s 403) never strands the link', async () => {
    const { linkId } = await createEmbeddedLink(stack, {}, { expired: true });
    await stack.admin.setFaults([
      { endpoint: 'op.tokens', mode: 'error-before-effect', status: 403, code: 'REFRESH_TOKEN_INVALID', rate: 1 },
    ]);
    let failure: unknown;
    try {
      failure = await stack
        .createVault({ now })
        .getAccessToken(linkId)
        .catch((error: unknown) => error);
    } finally {
      await stack.admin.clearFaults();
    }
    // Before: VaultError REAUTH_REQUIRED, the link stranded until the user logs in again.
    expect(failure).toBeInstanceOf(TokenRefreshError);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
    expect((await stack.createVault({ now }).getAccessToken(linkId)).version).toBe(2);
  });

  it('a refused client-credentials grant (a rotated client secret) never strands the link', async () => {
    const { linkId } = await createEmbeddedLink(stack, {}, { expired: true });
    const rotated = stack.createVault({ now, wallet: { clientSecret: 'an-old-client-secret' } });
    const failure = await rotated.getAccessToken(linkId).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TokenRefreshError);
    expect((failure as TokenRefreshError).code).toBe('TOKEN_REFRESH_FAILED');
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
    // With the right secret the same link refreshes: nothing was lost.
    const token = await stack.createVault({ now }).getAccessToken(linkId);
    expect(token.version).toBe(2);
  });

  it('a standalone refresh refused for the client (invalid_client) is retryable, not REAUTH_REQUIRED', async () => {
    const { linkId } = await standaloneLink();
    const later = () => now() + 3_600_000;
    const failure = await stack
      .createVault({ now: later, wallet: { clientSecret: 'an-old-client-secret' } })
      .getAccessToken(linkId)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TokenRefreshError);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
    expect((await stack.createVault({ now: later }).getAccessToken(linkId)).version).toBe(2);
  });

  it('a refresh that outlives its transaction is saved again: rotated tokens are never lost', async () => {
    const { user, linkId } = await createEmbeddedLink(stack, {}, { expired: true });
    // The rotation takes longer than the lock's transaction lives here: the wallet has rotated the
    // pair by the time the first save is refused.
    await stack.admin.setFaults([{ endpoint: 'op.tokens', mode: 'latency', rate: 1, delayMs: 1500 }]);
    try {
      await stack
        .createVault({ now, lockTimeoutMs: 700 })
        .getAccessToken(linkId)
        .catch(() => undefined);
    } finally {
      await stack.admin.clearFaults();
    }
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    // The rotated pair was kept: the next caller uses it, with no refresh and no REAUTH_REQUIRED.
    const token = await stack.createVault({ now }).getAccessToken(linkId);
    expect(token.version).toBe(2);
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
  });

  it('no refresh holds a main-pool connection while its wallet call’s audit row waits for one: four at once on a main pool of two, each pair saved by its own transaction', async () => {
    // The vault's main pool is two connections, and the wallet client writes its audit rows there
    // (as a worker's does): a refresh that held a main-pool connection for its lock would leave
    // its own audit row waiting behind it.
    const main = createDatabase(testDatabaseUrl(), { maxConnections: 2 });
    try {
      const links = await Promise.all([0, 1, 2, 3].map(() => createEmbeddedLink(stack, {}, { expired: true })));
      const vault = stack.createVault({
        now,
        database: main,
        wallet: createWalletCallLog(main, silent),
        lockTimeoutMs: 5000,
      });
      const tokens = await Promise.all(links.map((link) => vault.getAccessToken(link.linkId)));
      expect(tokens.map((token) => token.version)).toEqual([2, 2, 2, 2]);
      for (const { user, linkId } of links) {
        expect(await refreshesOf(user.userId)).toHaveLength(1);
        const events = await stack.database.linkEvent.findMany({ where: { linkId, type: 'TOKEN_REFRESHED' } });
        expect(events.map((event) => event.detail)).toEqual(['version 2']);
        expect(
          await stack.database.walletCall.count({ where: { requestReferenceNo: events[0]!.requestReferenceNo! } }),
        ).toBe(1);
      }
    } finally {
      await main.$disconnect();
    }
  });

  it('a rotated pair whose save cannot get a connection for longer than five tries is saved once it can: never lost', async () => {
    const { user, linkId } = await createEmbeddedLink(stack, {}, { expired: true });
    // The vault's lock pool is one connection. The wallet takes 1.5 s to rotate the pair; the
    // refresh's transaction gives up after 0.7 s, and then another transaction holds that one
    // connection for 6.8 s: every save the vault tries meanwhile waits 0.7 s for it and fails
    // (the vault used to give up after five).
    const lockPool = createDatabase(testDatabaseUrl(), { maxConnections: 1 });
    await stack.admin.setFaults([{ endpoint: 'op.tokens', mode: 'latency', rate: 1, delayMs: 1500 }]);
    let token: UserToken;
    let held: Promise<unknown> = Promise.resolve();
    try {
      const refreshPool = {
        database: lockPool,
        admission: createAdmissionGate({ maxInFlight: 1, maxQueued: 10, maxWaitMs: 5000 }),
      };
      const refreshed = stack
        .createVault({ now, lockTimeoutMs: 700, database: lockPool, refreshPool })
        .getAccessToken(linkId);
      await sleep(900);
      held = lockPool.$transaction(() => sleep(6800), { maxWait: 5000, timeout: 20_000 });
      token = await refreshed;
    } finally {
      await held.catch(() => undefined);
      await stack.admin.clearFaults();
      await lockPool.$disconnect();
    }
    expect(token.version).toBe(2);
    expect(await refreshesOf(user.userId)).toHaveLength(1);
    const events = await stack.database.linkEvent.findMany({ where: { linkId, type: 'TOKEN_REFRESHED' } });
    expect(events.map((event) => event.detail)).toEqual(['version 2, saved again after its transaction failed']);
    // The pair the wallet rotated is the stored one: the next caller uses it, no refresh, no REAUTH_REQUIRED.
    expect(await stack.createVault({ now }).getAccessToken(linkId)).toEqual(token);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
  });

  it('a refresh the refresh line cannot take is not sent: TokenRefreshBusy, retryable, the link ACTIVE with its tokens; it refreshes later', async () => {
    const first = await createEmbeddedLink(stack, {}, { expired: true });
    const second = await createEmbeddedLink(stack, {}, { expired: true });
    // A line of one, no room to wait: the first refresh (1 s at the wallet) holds it.
    const line = {
      database: stack.refreshPool.database,
      admission: createAdmissionGate({ maxInFlight: 1, maxQueued: 0, maxWaitMs: 2000 }),
    };
    const vault = stack.createVault({ now, refreshPool: line });
    await stack.admin.setFaults([{ endpoint: 'op.tokens', mode: 'latency', rate: 1, delayMs: 1000 }]);
    try {
      const running = vault.getAccessToken(first.linkId);
      await waitUntil(
        async () => line.admission.state().inFlight,
        (inFlight) => inFlight === 1,
        5000,
        10,
      );
      const refused = await vault.getAccessToken(second.linkId).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TokenRefreshBusy);
      expect(refused).toMatchObject({ code: 'TOKEN_REFRESH_BUSY', linkId: second.linkId, retryAfterMs: 2000 });
      expect((refused as Error).message).not.toMatch(/ey[A-Za-z0-9_-]{20,}/);
      expect((await running).version).toBe(2);
    } finally {
      await stack.admin.clearFaults();
    }
    // Nothing was sent for the second link: still ACTIVE, its tokens as they were, and it refreshes once asked again.
    expect(await refreshesOf(second.user.userId)).toHaveLength(0);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: second.linkId } })).status).toBe('ACTIVE');
    expect((await stack.tokens.read(stack.database, second.linkId))?.version).toBe(1);
    expect((await vault.getAccessToken(second.linkId)).version).toBe(2);
    expect(await refreshesOf(second.user.userId)).toHaveLength(1);
  });

  it('an older onboarding never overwrites newer tokens', async () => {
    const { user, linkId, issued } = await createEmbeddedLink(stack, {}, { expired: true });
    await advance(1);
    const refreshed = await stack.createVault({ now }).getAccessToken(linkId);
    expect(refreshed.version).toBe(2);
    // The session that brought the first pair is onboarded again late (a retried activity).
    await saveLinkWithTokens(stack.database, stack.tokens, {
      partnerUserId: `wallet:${user.profileId}`,
      profileId: user.profileId,
      maskedUserId: null,
      kind: 'EMBEDDED',
      scopes: ['openid'],
      requestReferenceNo: null,
      tokens: {
        accessToken: issued.accessToken,
        refreshToken: issued.refreshToken,
        accessTokenExpiresAt: new Date(issued.expiresAt * 1000),
        refreshTokenExpiresAt: null,
      },
    });
    const kept = await stack.createVault({ now }).getAccessToken(linkId);
    expect(kept).toEqual(refreshed);
  });

  it('holds the refresh lock for as long as a refresh may take (four wallet calls at WALLET_TIMEOUT_MS)', () => {
    expect(refreshLockTimeoutMs(30_000)).toBeGreaterThanOrEqual(4 * 30_000);
    expect(refreshLockTimeoutMs(10_000)).toBeGreaterThanOrEqual(40_000);
  });

  it('refuses unknown and unlinked links', async () => {
    const vault = stack.createVault({ now });
    await expect(vault.getAccessToken('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({
      code: 'LINK_NOT_FOUND',
    });
    const { linkId } = await embeddedLink();
    await stack.opsFetch(`/ops/links/${linkId}`, { method: 'DELETE' });
    await expect(vault.getAccessToken(linkId)).rejects.toMatchObject({ code: 'LINK_UNLINKED' });
  });
});

describe('key rotation (walletflow rotate-keys)', () => {
  it('re-encrypts stored tokens under the new first key; the old key can then leave the ring', async () => {
    const { randomBytes } = await import('node:crypto');
    const { createTokenCipher } = await import('../../lib/token-cipher.ts');
    const { createTokenStore } = await import('../../links/token-store.ts');
    const { rotateKeys } = await import('../../cli/rotate-keys.ts');
    const user = await stack.admin.createUser();
    const issued = await stack.admin.embeddedTokens(user.userId);
    const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
      partnerUserId: `rotate-${user.userId}`,
      profileId: user.profileId,
      maskedUserId: null,
      kind: 'EMBEDDED',
      scopes: [],
      requestReferenceNo: null,
      tokens: {
        accessToken: issued.accessToken,
        refreshToken: issued.refreshToken,
        accessTokenExpiresAt: new Date(issued.expiresAt * 1000),
        refreshTokenExpiresAt: null,
      },
    });
    const newKey = randomBytes(32);
    const counts = await rotateKeys(stack.database, [newKey, stack.encryptionKey]);
    expect(counts.links.reencrypted).toBeGreaterThanOrEqual(1);
    const onlyNew = createTokenStore(createTokenCipher(newKey));
    expect((await onlyNew.read(stack.database, linkId))?.accessToken).toBe(issued.accessToken);
    // A second run finds nothing left to do for this link, and the version (refresh counter) is unchanged.
    const again = await rotateKeys(stack.database, [newKey, stack.encryptionKey]);
    expect(again.links.reencrypted).toBe(0);
    expect((await onlyNew.read(stack.database, linkId))?.version).toBe(1);
  });

  it('re-seals every sealed column of the schema, webhook endpoint secrets included', async () => {
    const { randomBytes } = await import('node:crypto');
    const { readFile } = await import('node:fs/promises');
    const { createTokenCipher } = await import('../../lib/token-cipher.ts');
    const { webhookSecretContext } = await import('../../webhooks/webhook-store.ts');
    const { rotateKeys, rotatedColumns } = await import('../../cli/rotate-keys.ts');
    // Every column the schema seals (Bytes holds nothing else here) is one the rotation re-seals.
    const schema = await readFile(new URL('../../prisma/schema.prisma', import.meta.url), 'utf8');
    const sealed: string[] = [];
    for (const [, model, body] of schema.matchAll(/^model (\w+) \{([^}]*)\}/gm)) {
      for (const [, field] of body!.matchAll(/^\s+(\w+)\s+Bytes\??\s/gm)) sealed.push(`${model}.${field}`);
    }
    expect(sealed.length).toBeGreaterThanOrEqual(6);
    expect(
      Object.values(rotatedColumns ?? {})
        .flat()
        .sort(),
    ).toEqual(sealed.sort());

    // A webhook endpoint's secret, sealed under the old key, opens under the new key alone after the rotation.
    const created = await stack.opsFetch('/ops/webhooks/endpoints', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://partner.example/webhooks', events: ['funding.approved'] }),
    });
    expect(created.status).toBe(201);
    const { id, secret } = (await created.json()) as { id: string; secret: string };
    const newKey = randomBytes(32);
    await rotateKeys(stack.database, [newKey, stack.encryptionKey]);
    const row = await stack.database.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(createTokenCipher(newKey).decrypt(row.secretEncrypted, webhookSecretContext(id))).toBe(secret);
  });

  it('reads each sealed table a page at a time: no statement reads one whole, and every value of every page is re-sealed', async () => {
    // Found by a read: the cash-in codes, webhook secrets, link and session ids were each read whole into memory by
    // one findMany; at 100,000 fundings a day a year's codes are more than the CLI's heap, so the old keys could never
    // leave the ring.
    const { randomBytes, randomUUID } = await import('node:crypto');
    const { Prisma } = await import('../../generated/prisma/client.ts');
    const { createTokenCipher } = await import('../../lib/token-cipher.ts');
    const { cashInCodeContext } = await import('../../fundings/funding-record.ts');
    const { webhookSecretContext } = await import('../../webhooks/webhook-store.ts');
    const { rotateKeys } = await import('../../cli/rotate-keys.ts');
    const { recordingDatabase } = await import('../../harness/query-plans.ts');
    const old = createTokenCipher(stack.encryptionKey);
    const codes = new Map<string, string>();
    for (let index = 0; index < 5; index += 1) {
      const id = randomUUID();
      const code = String(1_000_000 + index);
      codes.set(id, code);
      await stack.database.funding.create({
        data: {
          id,
          idempotencyKey: `rotate-${id}`,
          requestFingerprint: '0'.repeat(64),
          workflowId: `funding-rotate-test-${id}`,
          status: 'FAILED',
          recipientType: 'CODE',
          cashInCodeEncrypted: old.encrypt(code, cashInCodeContext(id)),
          cashInCodeMasked: `*****${code.slice(-2)}`,
          currency: 'PHP',
          amount: new Prisma.Decimal('12.00'),
        },
      });
    }
    const links: string[] = [];
    for (let index = 0; index < 3; index += 1) links.push((await embeddedLink()).linkId);
    const endpoints: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const created = await stack.opsFetch('/ops/webhooks/endpoints', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: `https://partner.example/rotate-${index}`, events: ['funding.approved'] }),
      });
      expect(created.status).toBe(201);
      endpoints.push(((await created.json()) as { id: string }).id);
    }
    const recording = recordingDatabase(testDatabaseUrl());
    const newKey = randomBytes(32);
    try {
      const counts = await rotateKeys(recording.database, [newKey, stack.encryptionKey], { pageRows: 2 });
      for (const part of ['links', 'cashInCodes', 'webhookSecrets'] as const) {
        expect(counts[part].examined, part).toBeGreaterThanOrEqual(3);
      }
      // (Values an earlier test of the file re-sealed under a key of its own are unreadable under this ring.)
      expect(counts.cashInCodes).toMatchObject({ reencrypted: 5, unreadable: 0 });
      const reads = recording.statements.filter(({ text }) =>
        /^\s*SELECT\b[\s\S]*\bFROM\s+"public"\."(funding|token_set|embedded_session|webhook_endpoint)"/i.test(text),
      );
      // Each of the four tables is read, and in pages: a statement of each carries a LIMIT.
      for (const table of ['funding', 'token_set', 'embedded_session', 'webhook_endpoint'])
        expect(
          reads.filter(({ text }) => text.includes(`FROM "public"."${table}"`) && /\bLIMIT\b/.test(text)).length,
          table,
        ).toBeGreaterThan(0);
      // Pages of two: the five codes took three reads, each after the last page's last id.
      expect(reads.filter(({ text }) => text.includes('FROM "public"."funding"')).length).toBeGreaterThanOrEqual(3);
      const whole = reads.filter(
        ({ text }) => !/\bLIMIT\b/i.test(text) && !/\bWHERE\b[\s\S]*\b(id|link_id)"? = \$1\b/i.test(text),
      );
      expect(whole.map(({ text }) => text)).toEqual([]);
    } finally {
      await recording.close();
    }
    const onlyNew = createTokenCipher(newKey);
    for (const [id, code] of codes) {
      const row = await stack.database.funding.findUniqueOrThrow({ where: { id } });
      expect(onlyNew.decrypt(row.cashInCodeEncrypted!, cashInCodeContext(id))).toBe(code);
    }
    for (const row of await stack.database.webhookEndpoint.findMany({ where: { id: { in: endpoints } } }))
      expect(() => onlyNew.decrypt(row.secretEncrypted, webhookSecretContext(row.id))).not.toThrow();
    const sealedLinks = await stack.database.tokenSet.findMany({ where: { linkId: { in: links } } });
    expect(sealedLinks).toHaveLength(3);
    for (const row of sealedLinks) expect(onlyNew.isStale(row.accessTokenEncrypted), row.linkId).toBe(false);
  });
});
