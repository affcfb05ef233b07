// Re-encrypts what older keys of the TOKEN_ENCRYPTION_KEY ring sealed under its first key: links'
// tokens and the tokens embedded sessions still hold. Each row is rewritten under its own row lock
// (the vault refreshes under the same lock), so a refresh is never overwritten by an older token.
import type { Database } from '../lib/database.ts';
import { sessionAccessTokenContext, sessionRefreshTokenContext } from './embedded-sessions.ts';
import { TokenCipherError, type TokenCipher } from '../lib/token-cipher.ts';
import { linkAccessTokenContext, linkRefreshTokenContext } from './token-store.ts';

export interface RotationCount {
  examined: number;
  reencrypted: number;
  /** Sealed under a key the ring does not hold (or damaged): left as they are, reported. */
  unreadable: number;
}

/** Rows a rotation reads at once: what it holds is a page, whatever a table holds (a year of cash-in codes). */
export const ROTATION_PAGE_ROWS = 500;

/** How many rows a rotation reads at once (a test's small pages cross a page's end with few rows). */
export interface RotationOptions {
  pageRows?: number;
}

/**
 * Every row of a table, a page at a time in its key's order: `readPage` gives up to `take` rows after the key `after`
 * (null: from the first).
 */
export async function* inPages<Row>(
  readPage: (after: string | null, take: number) => Promise<Row[]>,
  keyOf: (row: Row) => string,
  options: RotationOptions = {},
): AsyncGenerator<Row> {
  const take = options.pageRows ?? ROTATION_PAGE_ROWS;
  let after: string | null = null;
  for (;;) {
    const page = await readPage(after, take);
    yield* page;
    if (page.length < take) return;
    after = keyOf(page[page.length - 1]!);
  }
}

/** A sealed value under the first key: the same plaintext, re-sealed if an older key sealed it. */
const reseal = (cipher: TokenCipher, sealed: Uint8Array, context: string): Uint8Array<ArrayBuffer> | null =>
  cipher.isStale(sealed) ? cipher.encrypt(cipher.decrypt(sealed, context), context) : null;

async function resealOrCount(count: RotationCount, run: () => Promise<boolean>): Promise<boolean> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof TokenCipherError)) throw error;
    count.unreadable += 1;
    return false;
  }
}

export async function reencryptLinkTokens(
  database: Database,
  cipher: TokenCipher,
  options: RotationOptions = {},
): Promise<RotationCount> {
  const count: RotationCount = { examined: 0, reencrypted: 0, unreadable: 0 };
  const ids = inPages(
    (after, take) =>
      database.tokenSet.findMany({
        where: after === null ? {} : { linkId: { gt: after } },
        orderBy: { linkId: 'asc' },
        take,
        select: { linkId: true },
      }),
    (row) => row.linkId,
    options,
  );
  for await (const { linkId } of ids) {
    count.examined += 1;
    const changed = await resealOrCount(count, () =>
      database.$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<
          Array<{ access_token_encrypted: Uint8Array; refresh_token_encrypted: Uint8Array }>
        >`
        SELECT access_token_encrypted, refresh_token_encrypted FROM token_set WHERE link_id = ${linkId}::uuid FOR UPDATE`;
        if (!row) return false;
        const access = reseal(cipher, row.access_token_encrypted, linkAccessTokenContext(linkId));
        const refresh = reseal(cipher, row.refresh_token_encrypted, linkRefreshTokenContext(linkId));
        if (!access && !refresh) return false;
        await tx.tokenSet.update({
          where: { linkId },
          data: {
            ...(access ? { accessTokenEncrypted: access } : {}),
            ...(refresh ? { refreshTokenEncrypted: refresh } : {}),
          },
        });
        return true;
      }),
    );
    if (changed) count.reencrypted += 1;
  }
  return count;
}

export async function reencryptSessionTokens(
  database: Database,
  cipher: TokenCipher,
  options: RotationOptions = {},
): Promise<RotationCount> {
  const count: RotationCount = { examined: 0, reencrypted: 0, unreadable: 0 };
  const ids = inPages(
    (after, take) =>
      database.embeddedSession.findMany({
        where: { accessTokenEncrypted: { not: null }, ...(after === null ? {} : { id: { gt: after } }) },
        orderBy: { id: 'asc' },
        take,
        select: { id: true },
      }),
    (row) => row.id,
    options,
  );
  for await (const { id } of ids) {
    count.examined += 1;
    const changed = await resealOrCount(count, () =>
      database.$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<
          Array<{ access_token_encrypted: Uint8Array | null; refresh_token_encrypted: Uint8Array | null }>
        >`
        SELECT access_token_encrypted, refresh_token_encrypted FROM embedded_session WHERE id = ${id}::uuid FOR UPDATE`;
        if (!row?.access_token_encrypted) return false;
        const access = reseal(cipher, row.access_token_encrypted, sessionAccessTokenContext(id));
        const refresh = row.refresh_token_encrypted
          ? reseal(cipher, row.refresh_token_encrypted, sessionRefreshTokenContext(id))
          : null;
        if (!access && !refresh) return false;
        await tx.embeddedSession.update({
          where: { id },
          data: {
            ...(access ? { accessTokenEncrypted: access } : {}),
            ...(refresh ? { refreshTokenEncrypted: refresh } : {}),
          },
        });
        return true;
      }),
    );
    if (changed) count.reencrypted += 1;
  }
  return count;
}

/**
 * Re-seals one sealed column row by row under the ring's first key (the shape every sealed column
 * other than a link's tokens shares): each stale value decrypted under its row's context,
 * encrypted again, and written only if unchanged meanwhile (a concurrent writer's value wins).
 * A value under a key the ring lacks is counted unreadable and left as it is.
 */
export async function resealColumn<Row>(
  cipher: TokenCipher,
  rows: AsyncIterable<Row>,
  column: {
    sealed(row: Row): Uint8Array | null;
    context(row: Row): string;
    writeIfUnchanged(row: Row, resealed: Uint8Array<ArrayBuffer>): Promise<number>;
  },
): Promise<RotationCount> {
  const count: RotationCount = { examined: 0, reencrypted: 0, unreadable: 0 };
  for await (const row of rows) {
    count.examined += 1;
    const sealed = column.sealed(row);
    if (!sealed || !cipher.isStale(sealed)) continue;
    const context = column.context(row);
    let resealed: Uint8Array<ArrayBuffer>;
    try {
      resealed = cipher.encrypt(cipher.decrypt(sealed, context), context);
    } catch (error) {
      if (!(error instanceof TokenCipherError)) throw error;
      count.unreadable += 1;
      continue;
    }
    count.reencrypted += await column.writeIfUnchanged(row, resealed);
  }
  return count;
}
