// Reads and writes a link's tokens, encrypted at rest. Each ciphertext is bound to its link and
// field, so the database alone never yields a usable token. The refresh logic is the vault's
// (links/token-vault.ts); this module only stores.
import type { Prisma } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';

export interface PlainTokens {
  accessToken: string;
  refreshToken: string;
  accessTokenExpiresAt: Date;
  refreshTokenExpiresAt: Date | null;
}

export interface StoredTokens extends PlainTokens {
  version: number;
}

type Tx = Prisma.TransactionClient | Database;

export const linkAccessTokenContext = (linkId: string) => `link:${linkId}:access_token`;
export const linkRefreshTokenContext = (linkId: string) => `link:${linkId}:refresh_token`;

interface TokenRow {
  access_token_encrypted: Uint8Array;
  refresh_token_encrypted: Uint8Array;
  access_token_expires_at: Date;
  refresh_token_expires_at: Date | null;
  version: number;
}

export interface TokenStore {
  /** Replaces the link's tokens; the version grows by one (starts at 1). */
  save(tx: Tx, linkId: string, tokens: PlainTokens): Promise<number>;
  read(tx: Tx, linkId: string): Promise<StoredTokens | null>;
  /** Reads the tokens with a row lock held until the transaction ends (SELECT … FOR UPDATE). */
  readLocked(tx: Prisma.TransactionClient, linkId: string): Promise<StoredTokens | null>;
  remove(tx: Tx, linkId: string): Promise<void>;
}

export function createTokenStore(cipher: TokenCipher): TokenStore {
  const open = (linkId: string, row: TokenRow): StoredTokens => ({
    accessToken: cipher.decrypt(row.access_token_encrypted, linkAccessTokenContext(linkId)),
    refreshToken: cipher.decrypt(row.refresh_token_encrypted, linkRefreshTokenContext(linkId)),
    accessTokenExpiresAt: row.access_token_expires_at,
    refreshTokenExpiresAt: row.refresh_token_expires_at,
    version: row.version,
  });
  return {
    async save(tx, linkId, tokens) {
      const sealed = {
        accessTokenEncrypted: cipher.encrypt(tokens.accessToken, linkAccessTokenContext(linkId)),
        refreshTokenEncrypted: cipher.encrypt(tokens.refreshToken, linkRefreshTokenContext(linkId)),
        accessTokenExpiresAt: tokens.accessTokenExpiresAt,
        refreshTokenExpiresAt: tokens.refreshTokenExpiresAt,
      };
      const row = await tx.tokenSet.upsert({
        where: { linkId },
        create: { linkId, ...sealed },
        update: { ...sealed, version: { increment: 1 }, refreshedAt: new Date() },
        select: { version: true },
      });
      return row.version;
    },
    async read(tx, linkId) {
      const row = await tx.tokenSet.findUnique({ where: { linkId } });
      if (!row) return null;
      return open(linkId, {
        access_token_encrypted: row.accessTokenEncrypted,
        refresh_token_encrypted: row.refreshTokenEncrypted,
        access_token_expires_at: row.accessTokenExpiresAt,
        refresh_token_expires_at: row.refreshTokenExpiresAt,
        version: row.version,
      });
    },
    async readLocked(tx, linkId) {
      const rows = await tx.$queryRaw<TokenRow[]>`
        SELECT access_token_encrypted, refresh_token_encrypted, access_token_expires_at, refresh_token_expires_at, version
        FROM token_set WHERE link_id = ${linkId}::uuid FOR UPDATE`;
      const row = rows[0];
      return row ? open(linkId, row) : null;
    },
    async remove(tx, linkId) {
      await tx.tokenSet.deleteMany({ where: { linkId } });
    },
  };
}
