// An embedded session's onboarding, the one writer of its outcome: read the profile with the
// session's access token, find or create the EMBEDDED link by profileId and move the tokens to it,
// keep the page's small profile summary (first name, KYC status) on the session row, and mark it
// READY; or FAILED when the wallet refuses the token. Repeatable and safe to run twice at once:
// the link is saved by profileId and the row moves only from PENDING. Two callers: the
// onboardEmbeddedSession workflow's activity (activities/embedded-session.ts), and the landing
// page when the user is already there (on demand, ahead of a storm's backlog).
import { firstNameForPage, type OnboardEmbeddedSessionResult } from '../domain/embedded-session.ts';
import { embeddedPartnerUserId } from '../domain/link.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { isWalletError, scopesOf, type WalletClient, type WalletError } from '../wallet/index.ts';
import { sessionAccessTokenContext, sessionRefreshTokenContext } from './embedded-sessions.ts';
import { LinkUnlinkedSinceError, saveLinkWithTokensIn } from './link-record.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { TokenStore } from './token-store.ts';
import { jwtExpiry } from './token-expiry.ts';

export interface SessionOnboardingDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'getProfile'>;
  tokens: TokenStore;
  cipher: TokenCipher;
  logger: Logger;
}

/** What one try at onboarding a session did. */
export type SessionOnboardingOutcome =
  /** The session's outcome (READY, or FAILED when the wallet refused its token); repeated tries answer the same. */
  | { kind: 'done'; result: OnboardEmbeddedSessionResult }
  /** The wallet did not answer the profile (time-out, 5xx, 429): nothing changed; try again. */
  | { kind: 'retry'; error: WalletError }
  | { kind: 'not-found' }
  /** PENDING with no tokens: nothing can onboard it. */
  | { kind: 'corrupt' };

/** The embedded refresh token's lifetime (interface: 1200 s), when its `exp` cannot be read. */
const EMBEDDED_REFRESH_LIFETIME_MS = 1_200_000;

const resultOf = (row: {
  id: string;
  status: string;
  linkId: string | null;
  errorCode: string | null;
}): OnboardEmbeddedSessionResult => ({
  sessionRecordId: row.id,
  status: row.status === 'READY' ? 'READY' : 'FAILED',
  linkId: row.linkId,
  errorCode: row.errorCode,
});

export function createSessionOnboarding(deps: SessionOnboardingDependencies) {
  const { database, logger } = deps;

  /** Ends onboarding as FAILED with `code` (a session already READY stays READY); the tokens go too. */
  async function fail(sessionRecordId: string, code: string): Promise<OnboardEmbeddedSessionResult> {
    await database.embeddedSession.updateMany({
      where: { id: sessionRecordId, status: 'PENDING' },
      data: { status: 'FAILED', errorCode: code.slice(0, 64), accessTokenEncrypted: null, refreshTokenEncrypted: null },
    });
    const row = await database.embeddedSession.findUniqueOrThrow({ where: { id: sessionRecordId } });
    logger.warn({ sessionRecordId, code: row.errorCode }, 'embedded session onboarding failed');
    return resultOf(row);
  }

  /** Links the session: profile → link (EMBEDDED, by profileId) with the session's tokens. Repeatable. */
  async function link(sessionRecordId: string): Promise<SessionOnboardingOutcome> {
    const row = await database.embeddedSession.findUnique({ where: { id: sessionRecordId } });
    if (!row) return { kind: 'not-found' };
    if (row.status !== 'PENDING') return { kind: 'done', result: resultOf(row) };
    if (!row.accessTokenEncrypted || !row.refreshTokenEncrypted) return { kind: 'corrupt' };
    const accessToken = deps.cipher.decrypt(row.accessTokenEncrypted, sessionAccessTokenContext(row.id));
    const refreshToken = deps.cipher.decrypt(row.refreshTokenEncrypted, sessionRefreshTokenContext(row.id));

    let profile;
    try {
      profile = await deps.wallet.getProfile(accessToken);
    } catch (error) {
      if (!isWalletError(error)) throw error;
      // 401: the delivered token is refused; the user must open the tile again.
      if (error.outcome === 'rejected')
        return {
          kind: 'done',
          result: await fail(sessionRecordId, error.httpStatus === 401 ? 'REAUTH_REQUIRED' : error.code),
        };
      return { kind: 'retry', error };
    }

    const { profileId, kycStatus, name } = profile.data;
    // The link and the session's READY in one transaction, the session locked and still PENDING: a try that took
    // longer than its activity (the profile call) and finishes after the session ended FAILED links nothing, and a
    // link unlinked since the session was stored stays unlinked (an older login never undoes a revoke).
    let saved: { linkId: string; created: boolean } | null;
    try {
      saved = await database.$transaction(async (tx) => {
        const [session] = await tx.$queryRaw<Array<{ status: string }>>`
          SELECT status::text AS status FROM embedded_session WHERE id = ${row.id}::uuid FOR UPDATE`;
        if (session?.status !== 'PENDING') return null;
        const linked = await saveLinkWithTokensIn(tx, deps.tokens, {
          partnerUserId: embeddedPartnerUserId(profileId),
          profileId,
          maskedUserId: null,
          kind: 'EMBEDDED',
          scopes: scopesOf(profile.data),
          requestReferenceNo: profile.requestReferenceNo,
          loginBegunAt: row.createdAt,
          tokens: {
            accessToken,
            refreshToken,
            accessTokenExpiresAt: row.accessTokenExpiresAt,
            refreshTokenExpiresAt:
              row.refreshTokenExpiresAt ??
              jwtExpiry(refreshToken) ??
              new Date(row.createdAt.getTime() + EMBEDDED_REFRESH_LIFETIME_MS),
          },
        });
        await tx.embeddedSession.update({
          where: { id: row.id },
          data: {
            status: 'READY',
            linkId: linked.linkId,
            firstName: firstNameForPage(name?.firstName),
            kycStatus,
            // The link holds the tokens now.
            accessTokenEncrypted: null,
            refreshTokenEncrypted: null,
          },
        });
        return linked;
      });
    } catch (error) {
      if (error instanceof LinkUnlinkedSinceError)
        return { kind: 'done', result: await fail(sessionRecordId, error.code) };
      throw error;
    }
    if (saved)
      logger.info({ sessionRecordId, linkId: saved.linkId, created: saved.created }, 'embedded session linked');
    return {
      kind: 'done',
      result: resultOf(await database.embeddedSession.findUniqueOrThrow({ where: { id: row.id } })),
    };
  }

  return { link, fail };
}

export type SessionOnboarding = ReturnType<typeof createSessionOnboarding>;
