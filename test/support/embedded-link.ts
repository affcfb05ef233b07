// The embedded-link fixture: a new sandbox user with an EMBEDDED link holding freshly issued
// embedded tokens, stored straight through saveLinkWithTokens and the token store, the way
// onboarding stores a link, but with no session URL call and no onboarding workflow: for tests
// (and the history capture) that need a linked wallet rather than the linking. Without vitest, so
// the capture script can use it too.
import type { Database } from '../../lib/database.ts';
import { saveLinkWithTokens } from '../../links/link-record.ts';
import { jwtExpiry } from '../../links/token-expiry.ts';
import type { TokenStore } from '../../links/token-store.ts';

/** The embedded token pair the sandbox's admin API issues for a user. */
export interface IssuedEmbeddedTokens {
  accessToken: string;
  refreshToken: string;
  /** Seconds since the epoch. */
  expiresAt: number;
}

/** What the fixture needs of a stack: the partner and replay stacks both have it. */
export interface EmbeddedLinkStack<UserInput, User extends { userId: string; profileId: string }> {
  admin: {
    createUser(input: UserInput): Promise<User>;
    embeddedTokens(userId: string): Promise<IssuedEmbeddedTokens>;
  };
  database: Database;
  tokens: TokenStore;
}

export interface EmbeddedLinkOptions<User> {
  /** Default: `wallet:<profileId>`, the name onboarding gives the partner user. */
  partnerUserId?: (user: User) => string;
  /** Default: `['openid']`. */
  scopes?: string[];
  /**
   * walletflow believes the access token expired a second ago (the wallet service does not), so
   * the vault refreshes it before its first use.
   */
  expired?: boolean;
}

export interface EmbeddedLink<User> {
  user: User;
  issued: IssuedEmbeddedTokens;
  linkId: string;
}

/** Creates the sandbox user from `userInput` and links it; the refresh token's expiry is its JWT `exp`. */
export async function createEmbeddedLink<UserInput, User extends { userId: string; profileId: string }>(
  stack: EmbeddedLinkStack<UserInput, User>,
  userInput: UserInput,
  options: EmbeddedLinkOptions<User> = {},
): Promise<EmbeddedLink<User>> {
  const user = await stack.admin.createUser(userInput);
  const issued = await stack.admin.embeddedTokens(user.userId);
  const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
    partnerUserId: options.partnerUserId?.(user) ?? `wallet:${user.profileId}`,
    profileId: user.profileId,
    maskedUserId: null,
    kind: 'EMBEDDED',
    scopes: options.scopes ?? ['openid'],
    requestReferenceNo: null,
    tokens: {
      accessToken: issued.accessToken,
      refreshToken: issued.refreshToken,
      accessTokenExpiresAt: options.expired ? new Date(Date.now() - 1000) : new Date(issued.expiresAt * 1000),
      refreshTokenExpiresAt: jwtExpiry(issued.refreshToken),
    },
  });
  return { user, issued, linkId };
}
