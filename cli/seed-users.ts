// The test users `walletflow dev` creates in the sandbox (through its admin API), one for each
// path a demo needs: an upgraded wallet, a wallet that is not upgraded (M133), and a small balance;
// and the partner's side of their money (contract-decisions section 10): a float in TREASURY from
// CAPITAL and a partner balance for each user (USER:wallet:{profileId}, the embedded-app user's
// partner user id), each an adjustment through the ops API under a fixed Idempotency-Key, so a
// restart never posts one twice.
import { writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { accountViewSchema } from '../domain/ledger.ts';
import { formatAmount, fromNumeric } from '../domain/money.ts';

export interface SeededUser {
  userId: string;
  profileId: string;
  mobile: string;
  password: string;
  kycLevel: 'KYC0' | 'KYC1';
  /** The wallet balance in the sandbox. */
  balance: string;
  name: string;
  /** The embedded-app user's partner user id: wallet:{profileId}. */
  partnerUserId: string;
  /** What the partner owes the user, seeded by seedPartnerBalances. */
  partnerBalance: string;
}

const testUsers = [
  {
    mobile: '09171234567',
    password: 'sandbox-pass',
    kycLevel: 'KYC1',
    balance: '5000.00',
    firstName: 'Ana',
    lastName: 'Reyes',
    partnerBalance: '2500.00',
  },
  {
    mobile: '09181234567',
    password: 'sandbox-pass',
    kycLevel: 'KYC0',
    balance: '1000.00',
    firstName: 'Ben',
    lastName: 'Cruz',
    partnerBalance: '500.00',
  },
  {
    mobile: '09191234567',
    password: 'sandbox-pass',
    kycLevel: 'KYC1',
    balance: '50.00',
    firstName: 'Carla',
    lastName: 'Santos',
    partnerBalance: '20.00',
  },
] as const;

/** The treasury's float: what ops fundings without a source draw on. */
export const TREASURY_FLOAT = '100000.00';

export async function seedTestUsers(sandboxUrl: string): Promise<SeededUser[]> {
  const seeded: SeededUser[] = [];
  for (const { partnerBalance, ...user } of testUsers) {
    const response = await fetch(`${sandboxUrl}/_sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(user),
    });
    if (response.status !== 201) {
      throw new Error(`seeding sandbox user ${user.mobile} failed: ${response.status} ${await response.text()}`);
    }
    const created = (await response.json()) as { userId: string; profileId: string };
    seeded.push({
      userId: created.userId,
      profileId: created.profileId,
      mobile: user.mobile,
      password: user.password,
      kycLevel: user.kycLevel,
      balance: user.balance,
      name: `${user.firstName} ${user.lastName}`,
      partnerUserId: `wallet:${created.profileId}`,
      partnerBalance,
    });
  }
  return seeded;
}

export interface SeededBalances {
  /** TREASURY's available now (its float less what fundings drew). */
  treasury: string;
  /** Each user's available partner balance now, by partner user id. */
  users: Map<string, string>;
}

const problemSchema = z.object({ code: z.string().optional() }).loose();

/**
 * Seeds the treasury's float and each user's partner balance through the ops API (a key with the
 * `accounts` and `admin` scopes: the treasury's float needs both), then reads what each account has
 * now. Idempotent: each adjustment's key is fixed (the treasury's) or the user's own (their profile
 * id), so a restart posts nothing twice.
 */
export async function seedPartnerBalances(options: {
  apiBase: string;
  opsKey: string;
  users: SeededUser[];
}): Promise<SeededBalances> {
  const headers = { authorization: `Bearer ${options.opsKey}`, 'content-type': 'application/json' };
  const adjust = async (account: string, idempotencyKey: string, value: string, reason: string) => {
    const response = await fetch(`${options.apiBase}/ops/accounts/${encodeURIComponent(account)}/adjustments`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ amount: { currency: 'PHP', value }, reason }),
    });
    // 201 posted, 200 posted before (a restart); a key seen with another amount also means "seeded before".
    if (response.status === 201 || response.status === 200) return;
    const problem = problemSchema.safeParse(await response.json().catch(() => ({})));
    if (response.status === 422 && problem.success && problem.data.code === 'IDEMPOTENCY_KEY_REUSED') return;
    throw new Error(
      `seeding ${account}: POST /ops/accounts/…/adjustments answered ${response.status}${problem.success && problem.data.code ? ` ${problem.data.code}` : ''}`,
    );
  };
  const available = async (account: string) => {
    const response = await fetch(`${options.apiBase}/ops/accounts/${encodeURIComponent(account)}`, { headers });
    if (response.status !== 200) throw new Error(`reading ${account}: GET /ops/accounts/… answered ${response.status}`);
    return accountViewSchema.parse(await response.json()).available.value;
  };
  await adjust('TREASURY', 'walletflow-dev:treasury-float', TREASURY_FLOAT, 'walletflow dev: the treasury float');
  for (const user of options.users) {
    await adjust(
      user.partnerUserId,
      `walletflow-dev:partner-balance:${user.partnerUserId}`,
      user.partnerBalance,
      `walletflow dev: ${user.name}'s partner balance`,
    );
  }
  const users = new Map<string, string>();
  for (const user of options.users) users.set(user.partnerUserId, await available(user.partnerUserId));
  return { treasury: await available('TREASURY'), users };
}

/**
 * A linked wallet for the first test user, as a standalone login would leave it (tokens from the
 * sandbox's admin shortcut), so `walletflow fund --link` works at once in a demo.
 */
export async function seedDemoLink(
  sandboxUrl: string,
  user: SeededUser,
  databaseUrl: string,
  tokenEncryptionKey: string,
): Promise<string> {
  const { createDatabase } = await import('../lib/database.ts');
  const { saveLinkWithTokens } = await import('../links/link-record.ts');
  const { createTokenCipher } = await import('../lib/token-cipher.ts');
  const { createTokenStore } = await import('../links/token-store.ts');
  const { STANDALONE_REFRESH_LIFETIME_MS } = await import('../links/token-expiry.ts');
  const response = await fetch(`${sandboxUrl}/_sandbox/users/${user.userId}/standalone-tokens`, { method: 'POST' });
  if (response.status !== 201)
    throw new Error(`sandbox standalone-tokens for ${user.mobile} failed: ${response.status}`);
  const tokens = (await response.json()) as {
    access_token: string;
    refresh_token: string;
    expires_in: string;
    scope?: string;
  };
  const profile = (await (await fetch(`${sandboxUrl}/_sandbox/users/${user.userId}`)).json()) as { profileId: string };
  const database = createDatabase(databaseUrl, { maxConnections: 1 });
  try {
    const { linkId } = await saveLinkWithTokens(
      database,
      createTokenStore(
        createTokenCipher(tokenEncryptionKey.split(',').map((key) => Buffer.from(key.trim(), 'base64'))),
      ),
      {
        partnerUserId: `demo-${user.name.split(' ')[0]?.toLowerCase() ?? 'user'}`,
        profileId: profile.profileId,
        maskedUserId: `*******${user.mobile.slice(-4)}`,
        kind: 'STANDALONE',
        scopes: tokens.scope ? tokens.scope.split(' ') : ['openid'],
        requestReferenceNo: null,
        tokens: {
          accessToken: tokens.access_token,
          refreshToken: tokens.refresh_token,
          accessTokenExpiresAt: new Date(Date.now() + Number(tokens.expires_in) * 1000),
          refreshTokenExpiresAt: new Date(Date.now() + STANDALONE_REFRESH_LIFETIME_MS),
        },
      },
    );
    return linkId;
  } finally {
    await database.$disconnect();
  }
}

/** Each item of the sample batch, in PHP. */
export const SAMPLE_ITEM_AMOUNT = '1.00';

/**
 * A sample batch file for `walletflow batches create` and the console's upload: `rows` items of
 * SAMPLE_ITEM_AMOUNT, each to a fresh cash-in code of an upgraded test user (codes live 30
 * minutes: a restart writes fresh ones). Answers how many items it holds and their total.
 */
export async function writeSampleBatch(
  sandboxUrl: string,
  users: SeededUser[],
  file: string,
  rows = 300,
): Promise<{ items: number; total: string }> {
  const upgraded = users.filter((user) => user.kycLevel === 'KYC1');
  if (upgraded.length === 0) throw new Error('no upgraded test user to pay');
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let start = 0; start < rows; start += 25) {
    const codes = await Promise.all(
      Array.from({ length: Math.min(25, rows - start) }, async (_, offset) => {
        const user = upgraded[(start + offset) % upgraded.length]!;
        const response = await fetch(`${sandboxUrl}/_sandbox/users/${user.userId}/cash-in-codes`, { method: 'POST' });
        if (response.status !== 201 && response.status !== 200)
          throw new Error(`the sandbox answered ${response.status} for a cash-in code`);
        return ((await response.json()) as { code: string }).code;
      }),
    );
    codes.forEach((code, offset) =>
      lines.push(`sample-${String(start + offset + 1).padStart(4, '0')},CODE,${code},${SAMPLE_ITEM_AMOUNT}`),
    );
  }
  await writeFile(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return { items: rows, total: formatAmount(fromNumeric(SAMPLE_ITEM_AMOUNT) * BigInt(rows), 'PHP') };
}
