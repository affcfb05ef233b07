// `walletflow rotate-keys`: after a new key is put first in TOKEN_ENCRYPTION_KEY (the old ones
// after it), re-encrypts every sealed column (tokens, cash-in codes, webhook endpoint secrets)
// under the new key; then the old keys can be dropped from the ring. Safe to run again, and while
// the API and workers run. `rotatedColumns` names what it re-seals: a test holds it to every
// sealed column of prisma/schema.prisma, so a new one cannot be forgotten.
import { loadConfig } from '../lib/config.ts';
import { createDatabase, type Database } from '../lib/database.ts';
import { reencryptCashInCodes } from '../fundings/funding-record.ts';
import { createTokenCipher } from '../lib/token-cipher.ts';
import {
  reencryptLinkTokens,
  reencryptSessionTokens,
  type RotationCount,
  type RotationOptions,
} from '../links/token-rotation.ts';
import { reencryptWebhookSecrets } from '../webhooks/webhook-store.ts';
import { exitCodes } from './exit-codes.ts';

/** Every sealed column (model.field) the rotation re-seals, by the part of it that does. */
export const rotatedColumns = {
  links: ['TokenSet.accessTokenEncrypted', 'TokenSet.refreshTokenEncrypted'],
  sessions: ['EmbeddedSession.accessTokenEncrypted', 'EmbeddedSession.refreshTokenEncrypted'],
  cashInCodes: ['Funding.cashInCodeEncrypted'],
  webhookSecrets: ['WebhookEndpoint.secretEncrypted'],
} as const;

/** Every sealed column re-sealed, each table read a page at a time (`ROTATION_PAGE_ROWS`, 500 rows). */
export async function rotateKeys(
  database: Database,
  keys: Buffer[],
  options: RotationOptions = {},
): Promise<Record<keyof typeof rotatedColumns, RotationCount>> {
  const cipher = createTokenCipher(keys);
  return {
    links: await reencryptLinkTokens(database, cipher, options),
    sessions: await reencryptSessionTokens(database, cipher, options),
    cashInCodes: await reencryptCashInCodes(database, cipher, options),
    webhookSecrets: await reencryptWebhookSecrets(database, cipher, options),
  };
}

export async function runRotateKeys(): Promise<number> {
  const config = loadConfig();
  if (!config.databaseUrl || !config.tokenEncryptionKeys) {
    console.error(
      'walletflow rotate-keys: DATABASE_URL and TOKEN_ENCRYPTION_KEY (the new key first, then the old ones) are required',
    );
    return exitCodes.config;
  }
  const database = createDatabase(config.databaseUrl);
  try {
    const counts = await rotateKeys(database, config.tokenEncryptionKeys);
    for (const [what, count] of Object.entries(counts)) {
      console.log(
        `${what}: ${count.reencrypted} re-encrypted of ${count.examined}${count.unreadable > 0 ? `, ${count.unreadable} under a key not in TOKEN_ENCRYPTION_KEY (left as they are)` : ''}`,
      );
    }
    if (Object.values(counts).some((count) => count.unreadable > 0)) {
      console.error(
        'walletflow rotate-keys: some values are under a key the ring does not hold: keep every old key until they are re-encrypted',
      );
      return exitCodes.failed;
    }
    console.log(
      `every stored secret is now under key ${createTokenCipher(config.tokenEncryptionKeys).keyId}; older keys can leave TOKEN_ENCRYPTION_KEY`,
    );
    return exitCodes.ok;
  } finally {
    await database.$disconnect();
  }
}
