// The session onboarding workflow's activities: read the profile with the session's access token,
// find or create the EMBEDDED link by profileId and move the tokens to it, and keep the page's
// small profile summary (first name, KYC status) on the session row. Results carry ids and codes.
import { ApplicationFailure } from '@temporalio/activity';
import { decodeJwt } from 'jose';
import { firstNameForPage, type OnboardEmbeddedSessionResult } from '../domain/embedded-session.ts';
import type { Database } from '../lib/database.ts';
import { sessionAccessTokenContext, sessionRefreshTokenContext } from '../links/embedded-sessions.ts';
import { saveLinkWithTokens } from '../links/link-record.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../links/token-cipher.ts';
import type { TokenStore } from '../links/token-store.ts';
import { embeddedSessionFailureTypes } from '../workflows/onboard-embedded-session.contract.ts';
import { isWalletError, scopesOf, type WalletClient } from '../wallet/index.ts';
import { walletRetry } from './wallet-retry.ts';

export interface EmbeddedSessionActivityDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'getProfile'>;
  tokens: TokenStore;
  cipher: TokenCipher;
  logger: Logger;
}

/** The embedded refresh token's lifetime (interface: 1200 s), when its `exp` cannot be read. */
const EMBEDDED_REFRESH_LIFETIME_MS = 1_200_000;

function refreshTokenExpiry(refreshToken: string, fallback: Date): Date {
  try {
    const { exp } = decodeJwt(refreshToken);
    return typeof exp === 'number' ? new Date(exp * 1000) : fallback;
  } catch {
    return fallback;
  }
}

export function createEmbeddedSessionActivities(deps: EmbeddedSessionActivityDependencies) {
  const { database, logger } = deps;

  const resultOf = (row: { id: string; status: string; linkId: string | null; errorCode: string | null }): OnboardEmbeddedSessionResult => ({
    sessionRecordId: row.id,
    status: row.status === 'READY' ? 'READY' : 'FAILED',
    linkId: row.linkId,
    errorCode: row.errorCode,
  });

  async function fail(sessionRecordId: string, code: string): Promise<OnboardEmbeddedSessionResult> {
    // The tokens go too: nothing will use them.
    await database.embeddedSession.updateMany({
      where: { id: sessionRecordId, status: 'PENDING' },
      data: { status: 'FAILED', errorCode: code.slice(0, 64), accessTokenEncrypted: null, refreshTokenEncrypted: null },
    });
    const row = await database.embeddedSession.findUniqueOrThrow({ where: { id: sessionRecordId } });
    logger.warn({ sessionRecordId, code: row.errorCode }, 'embedded session onboarding failed');
    return resultOf(row);
  }

  return {
    /** Links the session: profile → link (EMBEDDED, by profileId) with the session's tokens. Repeatable. */
    async linkEmbeddedSession(sessionRecordId: string): Promise<OnboardEmbeddedSessionResult> {
      const row = await database.embeddedSession.findUnique({ where: { id: sessionRecordId } });
      if (!row) throw ApplicationFailure.nonRetryable(`embedded session ${sessionRecordId} does not exist`, embeddedSessionFailureTypes.notFound);
      if (row.status !== 'PENDING') return resultOf(row);
      if (!row.accessTokenEncrypted || !row.refreshTokenEncrypted) {
        throw ApplicationFailure.nonRetryable('embedded session has no tokens', embeddedSessionFailureTypes.corrupt);
      }
      const accessToken = deps.cipher.decrypt(row.accessTokenEncrypted, sessionAccessTokenContext(row.id));
      const refreshToken = deps.cipher.decrypt(row.refreshTokenEncrypted, sessionRefreshTokenContext(row.id));

      let profile;
      try {
        profile = await deps.wallet.getProfile(accessToken);
      } catch (error) {
        if (isWalletError(error) && error.outcome === 'rejected') {
          // 401: the delivered token is refused; the user must open the tile again.
          return fail(sessionRecordId, error.httpStatus === 401 ? 'REAUTH_REQUIRED' : error.code);
        }
        if (isWalletError(error)) {
          throw walletRetry(error, `profile ${error.outcome}: ${error.code} (${error.requestReferenceNo})`);
        }
        throw error;
      }

      const { profileId, kycStatus, name } = profile.data;
      const { linkId, created } = await saveLinkWithTokens(database, deps.tokens, {
        partnerUserId: `wallet:${profileId}`,
        profileId,
        maskedUserId: null,
        kind: 'EMBEDDED',
        scopes: scopesOf(profile.data),
        requestReferenceNo: profile.requestReferenceNo,
        tokens: {
          accessToken,
          refreshToken,
          accessTokenExpiresAt: row.accessTokenExpiresAt,
          refreshTokenExpiresAt: row.refreshTokenExpiresAt ?? refreshTokenExpiry(refreshToken, new Date(row.createdAt.getTime() + EMBEDDED_REFRESH_LIFETIME_MS)),
        },
      });
      await database.embeddedSession.updateMany({
        where: { id: row.id, status: 'PENDING' },
        data: {
          status: 'READY',
          linkId,
          firstName: firstNameForPage(name?.firstName),
          kycStatus,
          // The link holds the tokens now.
          accessTokenEncrypted: null,
          refreshTokenEncrypted: null,
        },
      });
      logger.info({ sessionRecordId, linkId, created }, 'embedded session linked');
      return resultOf(await database.embeddedSession.findUniqueOrThrow({ where: { id: row.id } }));
    },

    /** Ends onboarding as FAILED with `code` (a session already READY stays READY). */
    async failEmbeddedSession(sessionRecordId: string, code: string): Promise<OnboardEmbeddedSessionResult> {
      return fail(sessionRecordId, code);
    },
  };
}

export type EmbeddedSessionActivities = ReturnType<typeof createEmbeddedSessionActivities>;
