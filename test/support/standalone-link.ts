// The standalone-link fixture: a sandbox user's freshly issued standalone tokens stored as a connect login stores them
// (saveLinkWithTokens), without the login's pages: for tests that need a wallet linked to a partner user, not the
// linking.
import type { Database } from '../../lib/database.ts';
import { saveLinkWithTokens } from '../../links/link-record.ts';
import type { TokenStore } from '../../links/token-store.ts';
import type { SandboxAdminClient } from '../../sandbox/admin-client.ts';

/** What the fixture needs of a stack. */
export interface StandaloneLinkStack {
  admin: Pick<SandboxAdminClient, 'standaloneTokens'>;
  database: Database;
  tokens: TokenStore;
}

/**
 * Links `user`'s wallet to `partnerUserId` (a STANDALONE link), its access token valid for `validMs`; as a login begun
 * at `loginBegunAt` when given (one an unlink since refuses).
 */
export async function saveStandaloneLink(
  stack: StandaloneLinkStack,
  user: { userId: string; profileId: string },
  partnerUserId: string,
  validMs = 3_600_000,
  loginBegunAt?: Date,
): Promise<{ linkId: string; created: boolean }> {
  const tokens = await stack.admin.standaloneTokens(user.userId);
  return saveLinkWithTokens(stack.database, stack.tokens, {
    partnerUserId,
    profileId: user.profileId,
    maskedUserId: null,
    kind: 'STANDALONE',
    scopes: [],
    requestReferenceNo: null,
    ...(loginBegunAt ? { loginBegunAt } : {}),
    tokens: {
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      accessTokenExpiresAt: new Date(Date.now() + validMs),
      refreshTokenExpiresAt: null,
    },
  });
}
