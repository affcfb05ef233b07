// Linked wallets whose access tokens walletflow believes expired, for the bench and the soak: a
// sandbox user, an embedded token pair the sandbox issues for it, and the link stored the way
// onboarding stores one (links/link-record.ts), with the access token's expiry a second in the
// past. The wallet still honours both tokens; walletflow refreshes each link before its first use.
// The only way to have hundreds of links need a refresh at once without waiting out the tokens'
// ten minutes.
import type { Database } from '../lib/database.ts';
import { createTokenCipher } from '../lib/token-cipher.ts';
import { saveLinkWithTokens } from '../links/link-record.ts';
import { jwtExpiry } from '../links/token-expiry.ts';
import { createTokenStore } from '../links/token-store.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';

export interface ExpiredLink {
  userId: string;
  linkId: string;
}

/**
 * `count` such links, several made at once; the users' mobile numbers are `mobilePrefix` and five digits (absent: the
 * sandbox's own).
 */
export async function createExpiredLinks(
  deps: { admin: SandboxAdminClient; database: Database; tokenEncryptionKey: Buffer },
  options: { count: number; mobilePrefix?: string },
): Promise<ExpiredLink[]> {
  const tokens = createTokenStore(createTokenCipher(deps.tokenEncryptionKey));
  const links: ExpiredLink[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(16, options.count) }, async () => {
      while (next < options.count) {
        const index = next;
        next += 1;
        const mobile =
          options.mobilePrefix === undefined
            ? {}
            : { mobile: `${options.mobilePrefix}${String(index).padStart(5, '0')}` };
        const user = await deps.admin.createUser({
          ...mobile,
          kycLevel: 'KYC1',
          balance: '0.00',
          walletLimit: '900000000.00',
        });
        const issued = await deps.admin.embeddedTokens(user.userId);
        const { linkId } = await saveLinkWithTokens(deps.database, tokens, {
          partnerUserId: `wallet:${user.profileId}`,
          profileId: user.profileId,
          maskedUserId: null,
          kind: 'EMBEDDED',
          scopes: ['openid'],
          requestReferenceNo: null,
          tokens: {
            accessToken: issued.accessToken,
            refreshToken: issued.refreshToken,
            accessTokenExpiresAt: new Date(Date.now() - 1000),
            refreshTokenExpiresAt: jwtExpiry(issued.refreshToken),
          },
        });
        links.push({ userId: user.userId, linkId });
      }
    }),
  );
  return links;
}
