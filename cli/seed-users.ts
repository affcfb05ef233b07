// The test users `walletflow dev` creates in the sandbox (through its admin API), one for each
// path a demo needs: an upgraded wallet, a wallet that is not upgraded (M133), and a small balance.
export interface SeededUser {
  userId: string;
  mobile: string;
  password: string;
  kycLevel: 'KYC0' | 'KYC1';
  balance: string;
  name: string;
}

const testUsers = [
  { mobile: '09171234567', password: 'sandbox-pass', kycLevel: 'KYC1', balance: '5000.00', firstName: 'Ana', lastName: 'Reyes' },
  { mobile: '09181234567', password: 'sandbox-pass', kycLevel: 'KYC0', balance: '1000.00', firstName: 'Ben', lastName: 'Cruz' },
  { mobile: '09191234567', password: 'sandbox-pass', kycLevel: 'KYC1', balance: '50.00', firstName: 'Carla', lastName: 'Santos' },
] as const;

export async function seedTestUsers(sandboxUrl: string): Promise<SeededUser[]> {
  const seeded: SeededUser[] = [];
  for (const user of testUsers) {
    const response = await fetch(`${sandboxUrl}/_sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(user),
    });
    if (response.status !== 201) {
      throw new Error(`seeding sandbox user ${user.mobile} failed: ${response.status} ${await response.text()}`);
    }
    const created = (await response.json()) as { userId: string };
    seeded.push({
      userId: created.userId,
      mobile: user.mobile,
      password: user.password,
      kycLevel: user.kycLevel,
      balance: user.balance,
      name: `${user.firstName} ${user.lastName}`,
    });
  }
  return seeded;
}

/**
 * A linked wallet for the first test user, as a standalone login would leave it (tokens from the
 * sandbox's admin shortcut), so `walletflow fund --link` works at once in a demo.
 */
export async function seedDemoLink(sandboxUrl: string, user: SeededUser, databaseUrl: string, tokenEncryptionKey: string): Promise<string> {
  const { createDatabase } = await import('../lib/database.ts');
  const { saveLinkWithTokens } = await import('../links/link-record.ts');
  const { createTokenCipher } = await import('../links/token-cipher.ts');
  const { createTokenStore } = await import('../links/token-store.ts');
  const { STANDALONE_REFRESH_LIFETIME_MS } = await import('../links/token-expiry.ts');
  const response = await fetch(`${sandboxUrl}/_sandbox/users/${user.userId}/standalone-tokens`, { method: 'POST' });
  if (response.status !== 201) throw new Error(`sandbox standalone-tokens for ${user.mobile} failed: ${response.status}`);
  const tokens = (await response.json()) as { access_token: string; refresh_token: string; expires_in: string; scope?: string };
  const profile = (await (await fetch(`${sandboxUrl}/_sandbox/users/${user.userId}`)).json()) as { profileId: string };
  const database = createDatabase(databaseUrl, { maxConnections: 1 });
  try {
    const { linkId } = await saveLinkWithTokens(database, createTokenStore(createTokenCipher(tokenEncryptionKey.split(',').map((key) => Buffer.from(key.trim(), 'base64')))), {
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
    });
    return linkId;
  } finally {
    await database.$disconnect();
  }
}
