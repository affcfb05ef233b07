// Ops key names compare without regard to case in SQL as they do in the code, whatever the database's locale: a key's
// name is A-Z a-z 0-9 . _ - (lib/ops-keys.ts), lowered in JavaScript by the Unicode default rules, and a database made
// with a Turkish locale (ICU `tr-TR`, or a libc `tr_TR` ctype) lowers `I` to a dotless `ı`. So `INFRA` never equalled
// `infra` there: the batch approval threshold's 24-hour sum missed such a key's batches, and the audit's person filter
// its rows. Each comparison lowers in the C collation, which lowers A-Z alone, as the names have.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOpsActions } from '../../audit/ops-actions.ts';
import { createDatabase, dropDatabase, quotedIdentifier, type Database } from '../../lib/database.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { batchRecordsOn, codeItems } from '../support/batch-records.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const workerUrl = testDatabaseUrl();
const turkishName = `${new URL(workerUrl).pathname.slice(1)}_tr`;
const turkishUrl = (() => {
  const url = new URL(workerUrl);
  url.pathname = `/${turkishName}`;
  return url.toString();
})();
let database: Database;

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: workerUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${quotedIdentifier(turkishName)}`);
    await admin.query(
      `CREATE DATABASE ${quotedIdentifier(turkishName)} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'tr-TR' LOCALE 'C.UTF-8'`,
    );
  } finally {
    await admin.end();
  }
  await applyMigrations(turkishUrl);
  database = createDatabase(turkishUrl);
  // The database lowers as Turkish does: the premise of every case below.
  const [row] = await database.$queryRaw<Array<{ lowered: string }>>`SELECT lower('INFRA') AS lowered`;
  expect(row!.lowered).toBe('ınfra');
});

afterAll(async () => {
  await database?.$disconnect();
  await dropDatabase(workerUrl, turkishName);
});

describe('a database with a Turkish locale', () => {
  it('adds up what a key whose name has a capital I stored unapproved in 24 hours: batches split under the threshold wait like one over it', async () => {
    const { insertBatch, credit } = batchRecordsOn(database);
    const partnerUserId = `locale-${randomUUID()}`;
    await credit(partnerUserId, 1_000_000n);
    const store = (createdBy: string, amount: bigint) => {
      const batchId = randomUUID();
      const items = codeItems(batchId, 1, { reference: () => 'only', code: () => '1234567', amount });
      return insertBatch(batchId, partnerUserId, items, 100_000n, createdBy);
    };
    // 60.00 alone is under the threshold (100.00): it runs.
    expect(await store('INFRA-Ops', 60_000n)).toEqual({ stored: true, needsApproval: false });
    // 50.00 more by the same key, its name in another case since: 110.00 in 24 hours, so it waits.
    expect(await store('Infra-ops', 50_000n)).toEqual({ stored: true, needsApproval: true });
  });

  it('finds a key’s audit rows by its name in any case', async () => {
    const path = `/ops/locale/${randomUUID()}`;
    await database.opsAction.create({ data: { keyName: 'INFRA', method: 'POST', path, status: 202 } });
    // A console write refused once the key's session had ended: its note names the key (console-router.ts).
    await database.opsAction.create({
      data: { keyName: null, channel: 'console', actor: 'session ended: INFRA', method: 'POST', path, status: 303 },
    });
    for (const person of ['INFRA', 'infra', 'Infra']) {
      const page = await listOpsActions(database, { person, limit: 50, action: { pathPrefix: path } });
      if (page.kind !== 'page') throw new Error(page.kind);
      expect(page.items.map((item) => item.keyName ?? item.actor).sort(), person).toEqual([
        'INFRA',
        'session ended: INFRA',
      ]);
    }
  });
});
