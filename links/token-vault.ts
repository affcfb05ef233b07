// The token vault: the one way to get a valid user access token for a link. It refreshes ahead of
// expiry under a per-link PostgreSQL row lock, re-reading the tokens once the lock is held, so
// concurrent workers never refresh twice (an embedded refresh invalidates the previous pair).
// Only the refresh token's own refusal (REFRESH_TOKEN_INVALID from the embedded refresh,
// invalid_grant from the standalone one) marks the link REAUTH_REQUIRED; any other failure (the
// client-credentials grant, a time-out) is a TokenRefreshError the caller retries. The lock is
// held on the vault's own pool (lib/database.ts RefreshPool), never on the main pool its wallet
// calls' audit rows need; it outlives the longest refresh, and a pair the wallet rotated but the
// first transaction could not keep is saved again until it lands. Tokens never leave in logs or errors.
import { Overloaded, overloadOf } from '../lib/admission.ts';
import type { Database, RefreshPool } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { jwtExpiry, STANDALONE_REFRESH_LIFETIME_MS } from './token-expiry.ts';
import type { PlainTokens, StoredTokens, TokenStore } from './token-store.ts';
import { isWalletError, type WalletClient, type WalletError } from '../wallet/index.ts';

/** Codes of the vault's own failures; each is final for the caller (non-retryable). */
export const vaultErrorCodes = {
  reauthRequired: 'REAUTH_REQUIRED',
  linkNotFound: 'LINK_NOT_FOUND',
  linkUnlinked: 'LINK_UNLINKED',
} as const;

/**
 * A refresh failed for a reason other than the refresh token's own refusal: the
 * client's credentials, a time-out, a 5xx. The link stays ACTIVE; the caller tries again later.
 * Nothing was sent on the user's behalf, so an activity reports it as "not sent".
 */
export class TokenRefreshError extends Error {
  override readonly name = 'TokenRefreshError';
  readonly code = 'TOKEN_REFRESH_FAILED';
  constructor(
    readonly linkId: string,
    readonly walletError: WalletError,
  ) {
    super(`the refresh of link ${linkId}'s tokens failed: ${walletError.message}`);
  }

  /** When the wallet asked to come back (429 Retry-After), from the refresh call. */
  get retryAfterMs(): number | undefined {
    return this.walletError.retryAfterMs;
  }
}

/**
 * A refresh not sent: the refresh pool's line (lib/database.ts RefreshPool) was full or the wait
 * ran out. Nothing was asked of the wallet and the link stays ACTIVE; the caller tries again after
 * `retryAfterMs`. An activity reports it as "not sent", as a TokenRefreshError.
 */
export class TokenRefreshBusy extends Error {
  override readonly name = 'TokenRefreshBusy';
  readonly code = 'TOKEN_REFRESH_BUSY';
  constructor(
    readonly linkId: string,
    readonly retryAfterMs: number,
  ) {
    super(
      `the refresh of link ${linkId}'s tokens was not sent: too many refreshes are waiting; try again in ${Math.ceil(retryAfterMs / 1000)} s`,
    );
  }
}

/**
 * Only these refusals say the refresh token itself is dead, each as the service's 400 (contract section 5; RFC 6749
 * section 5.2): nothing else may strand a link, the same code under another status (a gateway's 403) included.
 */
function refreshTokenRefused(error: WalletError): boolean {
  return (
    error.httpStatus === 400 &&
    ((error.operation === 'op.tokens' && error.code === 'REFRESH_TOKEN_INVALID') ||
      (error.operation === 'connect.token.refresh_token' && error.code === 'invalid_grant'))
  );
}

/**
 * How long the refresh lock's transaction may live: an embedded refresh is up to four wallet calls
 * (the client token, the refresh, and both again after a refused client token), each up to
 * WALLET_TIMEOUT_MS, plus the database's own time. A lock that expired mid-refresh would let a
 * second worker refresh with the token the first one is rotating (one of the pairs is lost).
 */
export function refreshLockTimeoutMs(walletTimeoutMs: number): number {
  return 4 * walletTimeoutMs + 10_000;
}

export class VaultError extends Error {
  override readonly name = 'VaultError';
  constructor(
    readonly code: (typeof vaultErrorCodes)[keyof typeof vaultErrorCodes],
    readonly linkId: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Refresh this long before the access token expires: 60 s of an embedded token's 600 s, 300 s of a standalone 3600 s.
 */
export const refreshMarginMs = { EMBEDDED: 60_000, STANDALONE: 300_000 } as const;

export interface UserToken {
  accessToken: string;
  /** The token set version it came from: a 401 with this version forces a refresh past it. */
  version: number;
}

export interface TokenVault {
  getAccessToken(linkId: string): Promise<UserToken>;
  /** Refreshes unless the stored tokens are already newer than `staleVersion`. */
  forceRefresh(linkId: string, staleVersion: number): Promise<UserToken>;
  /** Calls `use` with a valid token; a 401 for the user token forces one refresh and one retry. */
  withUserToken<T>(linkId: string, use: (accessToken: string) => Promise<T>): Promise<T>;
}

export interface TokenVaultDependencies {
  /** The main pool: the link and token reads outside the lock. */
  database: Database;
  /** The vault's own pool and its line: the refresh lock's transactions, and a rotated pair saved again. */
  refreshPool: RefreshPool;
  tokens: TokenStore;
  wallet: Pick<WalletClient, 'refreshStandalone' | 'refreshEmbedded'>;
  logger: Logger;
  /** Counts refreshes (walletflow_token_refreshes_total); absent: not counted. */
  metrics?: Pick<Metrics, 'tokenRefresh'>;
  now?: () => number;
  /** The wallet client's time-out per call (WALLET_TIMEOUT_MS), from which the lock's life is computed. */
  walletTimeoutMs?: number;
  /** Longest a refresh may hold the row lock; absent: refreshLockTimeoutMs(walletTimeoutMs). */
  lockTimeoutMs?: number;
}

/** A 401 that says the user access token itself was refused (transfers: UNAUTHORIZED; op: USER_TOKEN_INVALID). */
export function isUserTokenRejection(error: unknown): boolean {
  return (
    isWalletError(error) &&
    error.httpStatus === 401 &&
    (error.code === 'USER_TOKEN_INVALID' || error.code === 'UNAUTHORIZED')
  );
}

/**
 * How long a rotated pair whose transaction failed is saved again before the vault gives up: the
 * wallet has already invalidated the stored pair, so this one is the link's only valid one (the
 * embedded refresh token it carries lives 20 minutes).
 */
export const SAVE_AGAIN_FOR_MS = 10 * 60_000;

/** The pause before the save's next try: 250 ms, doubling, at most 15 s. */
export const saveAgainDelayMs = (attempt: number): number => Math.min(15_000, 250 * 2 ** (attempt - 1));

/** The interactive transaction the refresh holds its row lock in. */
type Transaction = Parameters<Parameters<Database['$transaction']>[0]>[0];

type RefreshOutcome = { kind: 'token'; token: UserToken } | { kind: 'reauth'; reason: string };

export function createTokenVault(deps: TokenVaultDependencies): TokenVault {
  const now = deps.now ?? Date.now;
  const lockTimeoutMs = deps.lockTimeoutMs ?? refreshLockTimeoutMs(deps.walletTimeoutMs ?? 10_000);
  // In-process single flight per link: one refresh transaction per process, the row lock across processes.
  const inFlight = new Map<string, Promise<UserToken>>();

  async function loadLink(linkId: string) {
    const link = await deps.database.link.findUnique({
      where: { id: linkId },
      select: { id: true, kind: true, status: true },
    });
    if (!link) throw new VaultError(vaultErrorCodes.linkNotFound, linkId, `link ${linkId} does not exist`);
    if (link.status === 'UNLINKED')
      throw new VaultError(vaultErrorCodes.linkUnlinked, linkId, `link ${linkId} was unlinked`);
    if (link.status === 'REAUTH_REQUIRED') {
      throw new VaultError(vaultErrorCodes.reauthRequired, linkId, `link ${linkId} needs the user to log in again`);
    }
    return link;
  }

  const isFresh = (stored: StoredTokens, kind: 'EMBEDDED' | 'STANDALONE') =>
    stored.accessTokenExpiresAt.getTime() - now() > refreshMarginMs[kind];

  async function refreshWithWallet(
    kind: 'EMBEDDED' | 'STANDALONE',
    stored: StoredTokens,
  ): Promise<{ tokens: PlainTokens; requestReferenceNo: string }> {
    if (kind === 'EMBEDDED') {
      const result = await deps.wallet.refreshEmbedded(stored.refreshToken);
      return {
        requestReferenceNo: result.requestReferenceNo,
        tokens: {
          accessToken: result.data.accessToken,
          refreshToken: result.data.refreshToken,
          accessTokenExpiresAt: result.data.expiresAt,
          refreshTokenExpiresAt: jwtExpiry(result.data.refreshToken),
        },
      };
    }
    const result = await deps.wallet.refreshStandalone(stored.refreshToken);
    const rotated = result.data.refreshToken !== null && result.data.refreshToken !== stored.refreshToken;
    return {
      requestReferenceNo: result.requestReferenceNo,
      tokens: {
        accessToken: result.data.accessToken,
        // Store whatever refresh token the answer carries (contract-decisions section 4).
        refreshToken: result.data.refreshToken ?? stored.refreshToken,
        accessTokenExpiresAt: result.data.expiresAt,
        refreshTokenExpiresAt: rotated
          ? new Date(now() + STANDALONE_REFRESH_LIFETIME_MS)
          : stored.refreshTokenExpiresAt,
      },
    };
  }

  /** A pair the wallet has rotated, and the version it replaces: it must reach the database. */
  interface Rotation {
    tokens: PlainTokens;
    requestReferenceNo: string;
    fromVersion: number;
  }

  async function refreshLocked(linkId: string, staleVersion: number | null): Promise<UserToken> {
    const rotation: { pair?: Rotation } = {};
    let work: Promise<RefreshOutcome> | undefined;
    let outcome: RefreshOutcome;
    try {
      // In the refresh pool's line first, each link's refreshes one after the other: a refresh
      // beyond the pool's size waits here holding nothing, not a connection or a row lock.
      outcome = await deps.refreshPool.admission.run(
        () =>
          deps.refreshPool.database.$transaction(
            (tx) => (work = refreshInTransaction(tx, linkId, staleVersion, rotation)),
            {
              maxWait: lockTimeoutMs,
              timeout: lockTimeoutMs,
            },
          ),
        linkId,
      );
    } catch (error) {
      // The transaction may have given up while the wallet call was still out: wait for that call
      // to end, so that a pair the wallet rotated is known here.
      await work?.catch(() => undefined);
      // Refused by the line, or no connection in time, before anything was sent: "not sent", try again later.
      const overload = work === undefined ? overloadOf(error) : null;
      if (overload)
        throw new TokenRefreshBusy(linkId, error instanceof Overloaded ? overload.retryAfterSeconds * 1000 : 1000);
      if (!rotation.pair) throw error;
      deps.logger.warn(
        { linkId, err: (error as Error).message },
        'refreshed tokens not saved by their transaction: saving them again',
      );
      outcome = { kind: 'token', token: await saveRotatedAgain(linkId, rotation.pair) };
    }
    if (outcome.kind === 'reauth') {
      deps.logger.warn({ linkId, reason: outcome.reason }, 'link needs the user to log in again');
      throw new VaultError(
        vaultErrorCodes.reauthRequired,
        linkId,
        `link ${linkId} needs the user to log in again (${outcome.reason})`,
      );
    }
    deps.logger.debug({ linkId, version: outcome.token.version }, 'user token ready');
    return outcome.token;
  }

  async function refreshInTransaction(
    tx: Transaction,
    linkId: string,
    staleVersion: number | null,
    rotation: { pair?: Rotation },
  ): Promise<RefreshOutcome> {
    const stored = await deps.tokens.readLocked(tx, linkId);
    const link = await tx.link.findUnique({ where: { id: linkId }, select: { kind: true, status: true } });
    if (!link || !stored) throw new VaultError(vaultErrorCodes.linkNotFound, linkId, `link ${linkId} has no tokens`);
    if (link.status !== 'ACTIVE') return { kind: 'reauth', reason: `link is ${link.status}` };
    // Re-read under the lock: another worker may have refreshed while we waited.
    const refreshedMeanwhile = staleVersion === null ? isFresh(stored, link.kind) : stored.version > staleVersion;
    if (refreshedMeanwhile)
      return { kind: 'token', token: { accessToken: stored.accessToken, version: stored.version } };
    if (stored.refreshTokenExpiresAt && stored.refreshTokenExpiresAt.getTime() <= now()) {
      deps.metrics?.tokenRefresh(link.kind, 'reauth_required');
      await markReauthRequired(tx, linkId, 'refresh token expired', null);
      return { kind: 'reauth', reason: 'refresh token expired' };
    }
    let refreshed: { tokens: PlainTokens; requestReferenceNo: string };
    try {
      refreshed = await refreshWithWallet(link.kind, stored);
    } catch (error) {
      if (isWalletError(error) && error.outcome === 'rejected' && refreshTokenRefused(error)) {
        deps.metrics?.tokenRefresh(link.kind, 'reauth_required');
        await markReauthRequired(tx, linkId, `refresh refused: ${error.code}`, error.requestReferenceNo);
        return { kind: 'reauth', reason: `refresh refused (${error.code})` };
      }
      deps.metrics?.tokenRefresh(link.kind, 'failed');
      if (isWalletError(error)) throw new TokenRefreshError(linkId, error);
      throw error;
    }
    rotation.pair = { ...refreshed, fromVersion: stored.version };
    deps.metrics?.tokenRefresh(link.kind, 'refreshed');
    const version = await deps.tokens.save(tx, linkId, refreshed.tokens);
    await tx.linkEvent.create({
      data: {
        linkId,
        type: 'TOKEN_REFRESHED',
        requestReferenceNo: refreshed.requestReferenceNo,
        detail: `version ${version}`,
      },
    });
    return { kind: 'token', token: { accessToken: refreshed.tokens.accessToken, version } };
  }

  /**
   * Saves a rotated pair whose own transaction failed after the wallet answered: the wallet has
   * already invalidated the stored pair, so this pair is the link's only valid one. Kept only over
   * the version it replaced (a newer pair saved meanwhile wins); a link a refresh with the dead
   * pair marked REAUTH_REQUIRED meanwhile is active again. Tried again with a growing pause for
   * SAVE_AGAIN_FOR_MS, on the refresh pool's connection kept for it: not in the line whose
   * refreshes may be what made the first save late.
   */
  async function saveRotatedAgain(linkId: string, pair: Rotation): Promise<UserToken> {
    const giveUpAt = Date.now() + SAVE_AGAIN_FOR_MS;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await deps.refreshPool.database.$transaction(
          async (tx) => {
            const stored = await deps.tokens.readLocked(tx, linkId);
            if (!stored) throw new VaultError(vaultErrorCodes.linkNotFound, linkId, `link ${linkId} has no tokens`);
            if (stored.version !== pair.fromVersion)
              return { accessToken: stored.accessToken, version: stored.version };
            const version = await deps.tokens.save(tx, linkId, pair.tokens);
            await tx.link.updateMany({ where: { id: linkId, status: 'REAUTH_REQUIRED' }, data: { status: 'ACTIVE' } });
            await tx.linkEvent.create({
              data: {
                linkId,
                type: 'TOKEN_REFRESHED',
                requestReferenceNo: pair.requestReferenceNo,
                detail: `version ${version}, saved again after its transaction failed`,
              },
            });
            return { accessToken: pair.tokens.accessToken, version };
          },
          { maxWait: lockTimeoutMs, timeout: lockTimeoutMs },
        );
      } catch (error) {
        if (error instanceof VaultError || Date.now() >= giveUpAt) {
          if (!(error instanceof VaultError))
            deps.logger.error(
              { linkId, attempt, err: (error as Error).message },
              'refreshed tokens could not be saved: the link needs a new login',
            );
          throw error;
        }
        const delayMs = saveAgainDelayMs(attempt);
        deps.logger.warn(
          { linkId, attempt, retryInMs: delayMs, err: (error as Error).message },
          'refreshed tokens not saved yet: trying again',
        );
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  async function markReauthRequired(
    tx: Transaction,
    linkId: string,
    detail: string,
    requestReferenceNo: string | null,
  ) {
    await tx.link.update({ where: { id: linkId }, data: { status: 'REAUTH_REQUIRED' } });
    await tx.linkEvent.create({ data: { linkId, type: 'REAUTH_REQUIRED', detail, requestReferenceNo } });
  }

  function singleFlight(linkId: string, staleVersion: number | null): Promise<UserToken> {
    const key = `${linkId}:${staleVersion ?? 'expiry'}`;
    let pending = inFlight.get(key);
    if (!pending) {
      pending = refreshLocked(linkId, staleVersion).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  }

  const vault: TokenVault = {
    async getAccessToken(linkId) {
      const link = await loadLink(linkId);
      const stored = await deps.tokens.read(deps.database, linkId);
      if (!stored) throw new VaultError(vaultErrorCodes.linkNotFound, linkId, `link ${linkId} has no tokens`);
      if (isFresh(stored, link.kind)) return { accessToken: stored.accessToken, version: stored.version };
      return singleFlight(linkId, null);
    },
    async forceRefresh(linkId, staleVersion) {
      await loadLink(linkId);
      return singleFlight(linkId, staleVersion);
    },
    async withUserToken(linkId, use) {
      const first = await vault.getAccessToken(linkId);
      try {
        return await use(first.accessToken);
      } catch (error) {
        if (!isUserTokenRejection(error)) throw error;
        const second = await vault.forceRefresh(linkId, first.version);
        return use(second.accessToken);
      }
    },
  };
  return vault;
}
