// The ledger's commands (docs/ledger.md): `walletflow accounts get|adjust`, `walletflow ledger`
// (entries) and `walletflow settle --date` (a day against the wallet and the ledger), through the
// ops API. `--output json` prints the API's answer; `text` (the default) a table.
import { randomUUID } from 'node:crypto';
import type { AccountView, AdjustmentView, LedgerEntryView, Settlement } from '../domain/ledger.ts';
import { reportError } from './cli-errors.ts';
import { exitCodes } from './exit-codes.ts';
import { createOpsClient } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';
import { table } from './status.ts';

export interface LedgerCommandOptions {
  api?: string;
  key?: string;
  output?: 'json' | 'text' | 'csv';
}

const client = (options: LedgerCommandOptions) => createOpsClient(resolveOpsTarget(options));
const json = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

async function run(command: string, work: () => Promise<void>): Promise<number> {
  try {
    await work();
    return exitCodes.ok;
  } catch (error) {
    return reportError(`walletflow ${command}`, error);
  }
}

/** `walletflow accounts get <account>`: TREASURY (or another system account) or a partner user id. */
export const runAccountsGet = (account: string, options: LedgerCommandOptions) =>
  run('accounts get', async () => {
    const { body } = await client(options).request('GET', `/ops/accounts/${encodeURIComponent(account)}`);
    if (options.output === 'json') return void json(body);
    const view = body as AccountView;
    process.stdout.write(`${table([['account', view.account], ['balance', `${view.balance.value} ${view.balance.currency}`], ['held', `${view.held.value} ${view.held.currency}`], ['available', `${view.available.value} ${view.available.currency}`]])}\n`);
  });

/** `walletflow accounts adjust <account> --amount -25.00 --reason …` (Idempotency-Key printed: reuse it to retry safely). */
export const runAccountsAdjust = (account: string, options: LedgerCommandOptions & { amount: string; reason: string; currency: string; idempotencyKey?: string }) =>
  run('accounts adjust', async () => {
    const key = options.idempotencyKey ?? randomUUID();
    const { status, body } = await client(options).request('POST', `/ops/accounts/${encodeURIComponent(account)}/adjustments`, {
      idempotencyKey: key,
      body: { amount: { currency: options.currency, value: options.amount }, reason: options.reason },
    });
    if (options.output === 'json') return void json(body);
    const adjustment = body as AdjustmentView;
    process.stdout.write(
      `${table([
        ['adjustment', `${adjustment.adjustmentId}${status === 200 ? ' (already made with this key)' : ''}`],
        ['account', adjustment.account],
        ['other leg', adjustment.counterAccount],
        ['amount', `${adjustment.amount.value} ${adjustment.amount.currency}`],
        ['reason', adjustment.reason],
        ['idempotency key', key],
      ])}\n`,
    );
  });

/** `walletflow ledger [--account …] [--limit …]`: entries, newest first. */
export const runLedger = (options: LedgerCommandOptions & { account?: string; limit: string; cursor?: string }) =>
  run('ledger', async () => {
    const query = new URLSearchParams({ limit: options.limit, ...(options.account ? { account: options.account } : {}), ...(options.cursor ? { cursor: options.cursor } : {}) });
    const { body } = await client(options).request('GET', `/ops/ledger/entries?${query.toString()}`);
    if (options.output === 'json') return void json(body);
    const page = body as { items: LedgerEntryView[]; nextCursor: string | null };
    const rows = [['AT', 'ACCOUNT', 'AMOUNT', 'PENDING', 'REFERENCE'], ...page.items.map((entry) => [entry.at, entry.account, `${entry.amount.value} ${entry.amount.currency}`, entry.pending ? 'held' : '', entry.reference])];
    process.stdout.write(`${table(rows)}\n${page.nextCursor ? `next page: --cursor ${page.nextCursor}\n` : ''}`);
  });

/** `walletflow settle --date YYYY-MM-DD`: exit 1 when anything is missing or mismatched. */
export async function runSettle(options: LedgerCommandOptions & { date: string }): Promise<number> {
  let clean = true;
  const code = await run('settle', async () => {
    const ops = client(options);
    if (options.output === 'csv') {
      const { body } = await ops.request('GET', `/ops/settlements/${encodeURIComponent(options.date)}?format=csv`, { raw: true });
      process.stdout.write(String(body));
    }
    const { body } = await ops.request('GET', `/ops/settlements/${encodeURIComponent(options.date)}`);
    const settlement = body as Settlement;
    clean = [settlement.fundings, settlement.payments].every((side) => side.missing === 0 && side.mismatched === 0);
    if (options.output === 'json') return void json(settlement);
    if (options.output === 'csv') return;
    const side = (name: string, counts: Settlement['fundings']) => [name, String(counts.matched), String(counts.missing), String(counts.mismatched), String(counts.total.count), `${counts.total.amount.value} ${counts.total.amount.currency}`];
    process.stdout.write(`settlement of ${settlement.date} (${settlement.timeZone})\n${table([['', 'MATCHED', 'MISSING', 'MISMATCHED', 'COUNT', 'TOTAL'], side('fundings', settlement.fundings), side('payments', settlement.payments)])}\n`);
    const problems = settlement.items.filter((item) => item.result !== 'matched');
    if (problems.length > 0) process.stdout.write(`\n${table([['KIND', 'ID', 'RESULT', 'DETAIL'], ...problems.map((item) => [item.kind, item.id, item.result, item.detail ?? ''])])}\n`);
  });
  return code === exitCodes.ok && !clean ? exitCodes.failed : code;
}
