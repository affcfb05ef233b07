// The ledger's commands (docs/ledger.md): `walletflow accounts get|adjust`, `walletflow ledger`
// (entries) and `walletflow settlement-report --date` (a day against the wallet and the ledger), through the
// ops API. `--output json` prints the API's answer; `text` (the default) a table; settlement-report also csv.
import { randomUUID } from 'node:crypto';
import type { Settlement } from '../client/ops-client.generated.ts';
import { exitCodes } from './exit-codes.ts';
import { listQuery } from './ops-input.ts';
import { amountText, printJson, printText, runOps, table, type OpsCommandOptions } from './output.ts';

export type LedgerCommandOptions = OpsCommandOptions;

/** `walletflow accounts get <account>`: TREASURY (or another system account) or a partner user id. */
export const runAccountsGet = (account: string, options: LedgerCommandOptions) =>
  runOps('accounts get', options, async (client) => {
    const { body } = await client.getAccount({ account });
    if (options.output === 'json') return printJson(body);
    printText(table([['account', body.account], ['balance', amountText(body.balance)], ['held', amountText(body.held)], ['available', amountText(body.available)]]));
  });

/** `walletflow accounts adjust <account> --amount -25.00 --reason …` (Idempotency-Key printed: reuse it to retry safely). */
export const runAccountsAdjust = (account: string, options: LedgerCommandOptions & { amount: string; reason: string; currency: string; idempotencyKey?: string }) =>
  runOps('accounts adjust', options, async (client) => {
    const key = options.idempotencyKey ?? randomUUID();
    const { status, body } = await client.adjustAccount({
      account,
      idempotencyKey: key,
      body: { amount: { currency: options.currency as 'PHP', value: options.amount }, reason: options.reason },
    });
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['adjustment', `${body.adjustmentId}${status === 200 ? ' (already made with this key)' : ''}`],
        ['account', body.account],
        ['other leg', body.counterAccount],
        ['amount', amountText(body.amount)],
        ['reason', body.reason],
        ['idempotency key', key],
      ]),
    );
  });

/** `walletflow ledger [--account …] [--limit …]`: entries, newest first. */
export const runLedger = (options: LedgerCommandOptions & { account?: string; limit: string; cursor?: string }) =>
  runOps('ledger', options, async (client) => {
    const { body } = await client.listLedgerEntries({ limit: Number(listQuery({ limit: options.limit }).limit), ...(options.account ? { account: options.account } : {}), ...(options.cursor ? { cursor: options.cursor } : {}) });
    if (options.output === 'json') return printJson(body);
    const rows = [['AT', 'ACCOUNT', 'AMOUNT', 'PENDING', 'REFERENCE'], ...body.items.map((entry) => [entry.at, entry.account, amountText(entry.amount), entry.pending ? 'held' : '', entry.reference])];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

/** `walletflow settlement-report --date YYYY-MM-DD`: the day's settlement report; exit 1 when anything is missing or mismatched. */
export const runSettlementReport = (options: LedgerCommandOptions & { date: string }) =>
  runOps('settlement-report', options, async (client) => {
    if (options.output === 'csv') {
      const { body } = await client.getSettlement({ date: options.date, format: 'csv' });
      process.stdout.write(String(body));
    }
    const { body } = await client.getSettlement({ date: options.date });
    const settlement = body as Settlement;
    const clean = [settlement.fundings, settlement.payments].every((side) => side.missing === 0 && side.mismatched === 0);
    const code = clean ? exitCodes.ok : exitCodes.failed;
    if (options.output === 'json') printJson(settlement);
    if (options.output !== 'text' && options.output !== undefined) return code;
    const side = (name: string, counts: Settlement['fundings']) => [name, String(counts.matched), String(counts.missing), String(counts.mismatched), String(counts.total.count), amountText(counts.total.amount)];
    printText(`settlement of ${settlement.date} (${settlement.timeZone})\n${table([['', 'MATCHED', 'MISSING', 'MISMATCHED', 'COUNT', 'TOTAL'], side('fundings', settlement.fundings), side('payments', settlement.payments)])}`);
    const problems = settlement.items.filter((item) => item.result !== 'matched');
    if (problems.length > 0) printText(`\n${table([['KIND', 'ID', 'RESULT', 'DETAIL'], ...problems.map((item) => [item.kind, item.id, item.result, item.detail ?? ''])])}`);
    return code;
  });
