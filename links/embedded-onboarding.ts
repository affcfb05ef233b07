// An embedded session's onboarding, the one writer of its outcome: read the profile with the
// session's access token, find or create the EMBEDDED link by profileId and move the tokens to it,
// keep the page's small profile summary (first name, KYC status) on the session row, and mark it
// READY; or FAILED when the wallet refuses the token and its refresh. An access token refused (it expired while the
// session waited: a storm's backlog, a delivery late) is refreshed once with the session's refresh token, under the
// session row's lock, as the vault refreshes a link's. Repeatable and safe to run twice at once:
// the link is saved by profileId and the row moves only from PENDING. Two callers: the
// onboardEmbeddedSession workflow's activity (activities/embedded-session.ts), and the landing
// page when the user is already there (on demand, ahead of a storm's backlog).
import { firstNameForPage, type OnboardEmbeddedSessionResult } from '../domain/embedded-session.ts';
import { embeddedPartnerUserId } from '../domain/link.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { Database, RefreshPool } from '../lib/database.ts';
import { refreshLockTimeoutMs, saveAgainDelayMs } from './token-vault.ts';
import type { Logger } from '../lib/logger.ts';
import { isWalletError, scopesOf, type WalletClient, type WalletError } from '../wallet/index.ts';
import { sessionAccessTokenContext, sessionRefreshTokenContext } from './embedded-sessions.ts';
import { LinkUnlinkedSinceError, saveLinkWithTokensIn } from './link-record.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { TokenStore } from './token-store.ts';
import { jwtExpiry } from './token-expiry.ts';

export interface SessionOnboardingDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'getProfile' | 'refreshEmbedded'>;
  tokens: TokenStore;
  cipher: TokenCipher;
  logger: Logger;
  /** Where a refresh holds its session's row lock: the refresh pool (lib/database.ts), never the audit rows' pool. */
  refreshPool: RefreshPool;
  /** WALLET_TIMEOUT_MS: the refresh's lock lasts refreshLockTimeoutMs of it; absent: 10 s. */
  walletTimeoutMs?: number;
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

/** A session's token pair, as its row holds it or as a refresh gave it. */
interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  accessTokenExpiresAt: Date;
  refreshTokenExpiresAt: Date | null;
  /**
   * A pair this try rotated whose save did not commit (its transaction gave up after the wallet answered): the access
   * token of the pair it replaced. The link takes this pair while the row still holds that one.
   */
  unsavedOver?: string;
}

/** An embedded_session row as a lock reads it. */
interface LockedSessionRow {
  status: string;
  access: Uint8Array | null;
  refresh: Uint8Array | null;
  access_expires: Date;
  refresh_expires: Date | null;
}

/** What a refresh of a session's refused pair came to. */
type Renewal =
  | { kind: 'renewed'; tokens: SessionTokens }
  /** The wallet refused the refresh token. */
  | { kind: 'refused' }
  /** The session is no longer onboarding. */
  | { kind: 'gone' }
  /** The wallet did not answer the refresh: nothing changed; try again. */
  | { kind: 'retry'; error: WalletError };

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

  const lockTimeoutMs = refreshLockTimeoutMs(deps.walletTimeoutMs ?? 10_000);

  /**
   * The session's pair after its access token `refused` was refused: refreshed once under the session row's lock (a
   * refresh invalidates the pair, so a second try that waited on the lock takes the pair the first stored, never
   * refreshing with a dead one), or the wallet's word on the refresh. `gone`: the session is no longer onboarding.
   * The lock is held on the refresh pool, in its line as the vault's refreshes are (one at a time per session); a
   * refresh the line cannot take throws Overloaded: tried again later.
   */
  async function renewed(id: string, refused: string): Promise<Renewal> {
    const rotation: { pair?: SessionTokens } = {};
    let work: Promise<Renewal> | undefined;
    try {
      return await deps.refreshPool.admission.run(
        () =>
          deps.refreshPool.database.$transaction((tx) => (work = renewInTransaction(tx, id, refused, rotation)), {
            maxWait: lockTimeoutMs,
            timeout: lockTimeoutMs,
          }),
        id,
      );
    } catch (error) {
      // The transaction gave up while the wallet call was out: wait for it, so that a pair the wallet rotated is
      // known here. That pair is then the only live one: saved again over the refused one, and used.
      await work?.catch(() => undefined);
      if (!rotation.pair) throw error;
      logger.warn({ sessionRecordId: id, err: (error as Error).message }, 'refreshed session tokens: saving again');
      await saveAgain(id, refused, rotation.pair);
      return { kind: 'renewed', tokens: { ...rotation.pair, unsavedOver: refused } };
    }
  }

  /**
   * A rotated pair whose transaction did not commit, saved over the pair it replaced while the session still holds
   * that one and still onboards (another try that finds it then takes it, never refreshing with the dead pair). As the
   * vault saves a link's again: on the refresh pool's connection kept for it (not in the line), tried again for as
   * long as a session's refresh token lives; given up, this try still uses the pair.
   */
  async function saveAgain(id: string, refused: string, pair: SessionTokens): Promise<void> {
    const giveUpAt = Date.now() + EMBEDDED_REFRESH_LIFETIME_MS;
    for (let attempt = 1; ; attempt += 1) {
      try {
        const saved = await deps.refreshPool.database.$transaction(
          async (tx) => {
            const locked = await lockedSession(tx, id);
            const stored = locked ? storedPair(id, locked) : null;
            if (stored?.accessToken !== refused) return false;
            await tx.embeddedSession.update({ where: { id }, data: sealedPair(id, pair) });
            return true;
          },
          { maxWait: lockTimeoutMs, timeout: lockTimeoutMs },
        );
        logger.info({ sessionRecordId: id, saved }, 'refreshed session tokens saved again, or the session moved on');
        return;
      } catch (error) {
        if (Date.now() >= giveUpAt) {
          logger.error({ sessionRecordId: id, attempt, err: (error as Error).message }, 'refreshed tokens not saved');
          return;
        }
        const delayMs = saveAgainDelayMs(attempt);
        logger.warn(
          { sessionRecordId: id, attempt, retryInMs: delayMs, err: (error as Error).message },
          'refreshed session tokens not saved yet: trying again',
        );
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  /** A pair as the session row stores it. */
  function sealedPair(id: string, pair: SessionTokens) {
    return {
      accessTokenEncrypted: deps.cipher.encrypt(pair.accessToken, sessionAccessTokenContext(id)),
      refreshTokenEncrypted: deps.cipher.encrypt(pair.refreshToken, sessionRefreshTokenContext(id)),
      accessTokenExpiresAt: pair.accessTokenExpiresAt,
      refreshTokenExpiresAt: pair.refreshTokenExpiresAt,
    };
  }

  async function renewInTransaction(
    tx: Prisma.TransactionClient,
    id: string,
    refused: string,
    rotation: { pair?: SessionTokens },
  ): Promise<Renewal> {
    const locked = await lockedSession(tx, id);
    const stored = locked ? storedPair(id, locked) : null;
    if (!stored) return { kind: 'gone' };
    if (stored.accessToken !== refused) return { kind: 'renewed', tokens: stored };
    let answer;
    try {
      answer = await deps.wallet.refreshEmbedded(stored.refreshToken);
    } catch (error) {
      if (!isWalletError(error)) throw error;
      return error.outcome === 'rejected' ? { kind: 'refused' } : { kind: 'retry', error };
    }
    const tokens: SessionTokens = {
      accessToken: answer.data.accessToken,
      refreshToken: answer.data.refreshToken,
      accessTokenExpiresAt: answer.data.expiresAt,
      refreshTokenExpiresAt: jwtExpiry(answer.data.refreshToken) ?? new Date(Date.now() + EMBEDDED_REFRESH_LIFETIME_MS),
    };
    rotation.pair = tokens;
    await tx.embeddedSession.update({ where: { id }, data: sealedPair(id, tokens) });
    logger.info({ sessionRecordId: id }, 'embedded session tokens refreshed before onboarding');
    return { kind: 'renewed', tokens };
  }

  /** A session row, locked for the caller's transaction (FOR UPDATE); undefined when there is none. */
  async function lockedSession(tx: Prisma.TransactionClient, id: string): Promise<LockedSessionRow | undefined> {
    const [row] = await tx.$queryRaw<LockedSessionRow[]>`
      SELECT status::text AS status, access_token_encrypted AS access, refresh_token_encrypted AS refresh,
        access_token_expires_at AS access_expires, refresh_token_expires_at AS refresh_expires
      FROM embedded_session WHERE id = ${id}::uuid FOR UPDATE`;
    return row;
  }

  /** The pair a locked session row holds, while it is onboarding; null once it is not (or holds none). */
  function storedPair(id: string, row: LockedSessionRow): SessionTokens | null {
    if (row.status !== 'PENDING' || !row.access || !row.refresh) return null;
    return sessionTokensOf(id, { ...row, access: row.access, refresh: row.refresh });
  }

  /** The session's pair as its row holds it. */
  function sessionTokensOf(
    id: string,
    row: { access: Uint8Array; refresh: Uint8Array; access_expires: Date; refresh_expires: Date | null },
  ): SessionTokens {
    return {
      accessToken: deps.cipher.decrypt(row.access, sessionAccessTokenContext(id)),
      refreshToken: deps.cipher.decrypt(row.refresh, sessionRefreshTokenContext(id)),
      accessTokenExpiresAt: row.access_expires,
      refreshTokenExpiresAt: row.refresh_expires,
    };
  }

  /** Links the session: profile → link (EMBEDDED, by profileId) with the session's tokens. Repeatable. */
  async function link(sessionRecordId: string): Promise<SessionOnboardingOutcome> {
    const row = await database.embeddedSession.findUnique({ where: { id: sessionRecordId } });
    if (!row) return { kind: 'not-found' };
    if (row.status !== 'PENDING') return { kind: 'done', result: resultOf(row) };
    if (!row.accessTokenEncrypted || !row.refreshTokenEncrypted) return { kind: 'corrupt' };
    let tokens = sessionTokensOf(row.id, {
      access: row.accessTokenEncrypted,
      refresh: row.refreshTokenEncrypted,
      access_expires: row.accessTokenExpiresAt,
      refresh_expires: row.refreshTokenExpiresAt,
    });
    const reread = async () => resultOf(await database.embeddedSession.findUniqueOrThrow({ where: { id: row.id } }));

    let profile;
    for (let refreshed = false; ; refreshed = true) {
      try {
        profile = await deps.wallet.getProfile(tokens.accessToken);
        break;
      } catch (error) {
        if (!isWalletError(error)) throw error;
        if (error.outcome !== 'rejected') return { kind: 'retry', error };
        if (error.httpStatus !== 401) return { kind: 'done', result: await fail(sessionRecordId, error.code) };
        // 401: the access token is refused. Once, the session's refresh token gets a new pair; refused too (or
        // refused again), the user must open the tile again.
        if (refreshed) return { kind: 'done', result: await fail(sessionRecordId, 'REAUTH_REQUIRED') };
        const renewal = await renewed(row.id, tokens.accessToken);
        if (renewal.kind === 'gone') return { kind: 'done', result: await reread() };
        if (renewal.kind === 'retry') return { kind: 'retry', error: renewal.error };
        if (renewal.kind === 'refused') return { kind: 'done', result: await fail(sessionRecordId, 'REAUTH_REQUIRED') };
        tokens = renewal.tokens;
      }
    }
    const { profileId, kycStatus, name } = profile.data;
    // The link and the session's READY in one transaction, the session locked and still PENDING: a try that took
    // longer than its activity (the profile call) and finishes after the session ended FAILED links nothing, and a
    // link unlinked since the session was stored stays unlinked (an older login never undoes a revoke).
    let saved: { linkId: string; created: boolean } | null;
    try {
      saved = await database.$transaction(async (tx) => {
        const session = await lockedSession(tx, row.id);
        const stored = session ? storedPair(row.id, session) : null;
        if (!stored) return null;
        // The newest pair: the row's (another try may have refreshed since this one read the profile, and the pair
        // read then is dead), unless this try rotated the row's pair and could not save the new one.
        const { accessToken, refreshToken, ...pair } =
          tokens.unsavedOver !== undefined && stored.accessToken === tokens.unsavedOver ? tokens : stored;
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
            accessTokenExpiresAt: pair.accessTokenExpiresAt,
            refreshTokenExpiresAt:
              pair.refreshTokenExpiresAt ??
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
