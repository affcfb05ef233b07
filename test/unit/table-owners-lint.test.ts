// The write monopolies ESLint keeps (eslint.config.js, rule records/only-records-write): the
// records alone write the funding and payment tables, the ledger alone writes the ledger's. Linted
// as if each snippet sat in the named file, with the project's own configuration.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: root });

async function ownerViolations(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'records/only-records-write')
    .map((message) => message.message);
}

const ledgerWrites = {
  'a Prisma write on ledgerEntry': 'export const f = (db: any) => db.ledgerEntry.create({ data: {} });',
  'a Prisma write on ledgerAccount': 'export const f = (tx: any) => tx.ledgerAccount.updateMany({ data: {} });',
  'a Prisma write on ledgerTransaction': 'export const f = (db: any) => db.ledgerTransaction.deleteMany({});',
  'raw SQL inserting into ledger_entry':
    'export const f = (db: any) => db.$executeRaw`INSERT INTO ledger_entry (account) VALUES (${1})`;',
  'raw SQL updating ledger_account':
    "export const f = (db: any) => db.$executeRawUnsafe('UPDATE ledger_account SET balance = 0');",
  'raw SQL deleting from "ledger_transaction"':
    'export const f = (db: any) => db.$executeRaw`DELETE FROM "ledger_transaction"`;',
};

describe('only the ledger writes the ledger tables', () => {
  it.each(Object.entries(ledgerWrites))('refuses %s outside ledger/', async (_name, code) => {
    for (const file of [
      'api/ops/accounts-routes.ts',
      'fundings/funding-record.ts',
      'activities/sweep.ts',
      'cli/seed-users.ts',
    ]) {
      expect(await ownerViolations(file, code), file).toEqual([expect.stringMatching(/only the ledger \(ledger\/\)/)]);
    }
  });

  it.each(Object.entries(ledgerWrites))('allows %s in ledger/ and in the migrations', async (_name, code) => {
    expect(await ownerViolations('ledger/ledger.ts', code)).toEqual([]);
    expect(await ownerViolations('prisma/schema-engine.ts', code)).toEqual([]);
  });

  it('allows reads of the ledger tables anywhere', async () => {
    const code =
      'export const f = (db: any) => [db.ledgerEntry.findMany({}), db.$queryRaw`SELECT * FROM ledger_entry e JOIN ledger_account a ON true`];';
    expect(await ownerViolations('harness/ledger-invariants.ts', code)).toEqual([]);
  });
});

describe('only the records write the funding and payment tables', () => {
  it('refuses a funding write outside the records, allows it in the funding record and the batch items record', async () => {
    const code =
      'export const f = (db: any) => [db.funding.update({}), db.$executeRaw`UPDATE funding SET status = ${1}`];';
    expect(await ownerViolations('api/ops/fundings-routes.ts', code)).toHaveLength(2);
    expect(await ownerViolations('ledger/ledger.ts', code)).toHaveLength(2);
    expect(await ownerViolations('fundings/batch-record.ts', code)).toHaveLength(2);
    expect(await ownerViolations('fundings/funding-record.ts', code)).toEqual([]);
    expect(await ownerViolations('fundings/batch-items-record.ts', code)).toEqual([]);
  });
});

describe('only the settlement runs write the settlement tables', () => {
  it('refuses a Prisma or SQL write of settlement_run or settlement_line outside ledger/settlement-runs.ts, even in ledger/', async () => {
    const code =
      'export const f = (db: any) => [db.settlementRun.update({}), db.settlementLine.createMany({}), db.$executeRaw`INSERT INTO settlement_line (run_id) VALUES (${1})`, db.$executeRaw`UPDATE settlement_run SET checked = 0`];';
    for (const file of ['ledger/settlement.ts', 'activities/settlement.ts', 'api/ops/settlement-routes.ts']) {
      expect(await ownerViolations(file, code), file).toEqual(
        Array(4).fill(expect.stringMatching(/only the settlement runs \(ledger\/settlement-runs\.ts\)/)),
      );
    }
    expect(await ownerViolations('ledger/settlement-runs.ts', code)).toEqual([]);
  });
});

describe("no application file writes the batches' tallies", () => {
  it('refuses a Prisma or SQL write of funding_batch_tally in every module, the funding record and the batch record too (the funding table’s triggers keep it)', async () => {
    const code =
      'export const f = (db: any) => [db.fundingBatchTally.upsert({}), db.$executeRaw`INSERT INTO funding_batch_tally (batch_id) VALUES (${1})`, db.$executeRaw`UPDATE funding_batch_tally SET count = 0`];';
    for (const file of [
      'fundings/funding-record.ts',
      'fundings/batch-record.ts',
      'api/console/batches-pages.ts',
      'ledger/ledger.ts',
    ]) {
      expect(await ownerViolations(file, code), file).toEqual(
        Array(3).fill(expect.stringMatching(/only the funding table's triggers/)),
      );
    }
    // Its reads are anyone's; a write of funding_batch is still the batch record's alone.
    expect(
      await ownerViolations(
        'fundings/funding-record.ts',
        'export const f = (db: any) => db.$queryRaw`SELECT * FROM funding_batch_tally`;',
      ),
    ).toEqual([]);
    expect(
      await ownerViolations(
        'fundings/batch-record.ts',
        'export const f = (db: any) => db.$executeRaw`UPDATE funding_batch SET state = ${1}`;',
      ),
    ).toEqual([]);
  });
});

describe("only access/ writes the console's sessions and the attempt counts, each table its one module", () => {
  it('refuses a write of console_session, console_sign_in or attempt_count outside its module, the purge activity included', async () => {
    const sessions =
      'export const f = (db: any) => [db.consoleSession.updateMany({}), db.consoleSignIn.create({}), db.$executeRaw`DELETE FROM console_session WHERE id = ${1}`];';
    const counts =
      'export const f = (db: any) => [db.attemptCount.upsert({}), db.$executeRaw`INSERT INTO attempt_count (kind) VALUES (${1})`];';
    for (const file of ['api/console/console-auth.ts', 'activities/purge.ts', 'access/attempt-limits.ts']) {
      expect(await ownerViolations(file, sessions), file).toEqual(
        Array(3).fill(expect.stringMatching(/only access\/console-sessions\.ts/)),
      );
    }
    for (const file of ['api/ops/ops-key-guard.ts', 'activities/purge.ts', 'access/console-sessions.ts']) {
      expect(await ownerViolations(file, counts), file).toEqual(
        Array(2).fill(expect.stringMatching(/only access\/attempt-limits\.ts/)),
      );
    }
    expect(await ownerViolations('access/console-sessions.ts', sessions)).toEqual([]);
    expect(await ownerViolations('access/attempt-limits.ts', counts)).toEqual([]);
  });
});
