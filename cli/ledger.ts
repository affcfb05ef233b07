// The ledger's commands (docs/ledger.md): `walletflow accounts get|adjust`, `walletflow ledger`
// (entries) and `walletflow settlement-report --date` (a day against the wallet and the ledger), through the
// ops API. `--output json` prints the API's answer; `text` (the default) a table; settlement-report also csv.
// settlement-report follows the day's run with a progress bar on stderr (stdout keeps the report), then
// reads the stored report a page at a time (json, text); `--output csv` reads the file whole before it
// prints it (a day of 100,000 lines is about 14 MB) and exits by its totals lines.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpsClient, Settlement, SettlementProgress } from '../client/ops-client.generated.ts';
import { OpsProblemError } from './ops-client.ts';
import { createCountProgress, type CountProgress } from './progress.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { listQuery } from './ops-input.ts';
import { DAY_SO_FAR_WORDS, settlementDateSchema, upTo } from '../domain/ledger.ts';
import { amountText, printJson, printText, runOps, sayKey, table, type OpsCommandOptions } from './output.ts';

export type LedgerCommandOptions = OpsCommandOptions;

/** `walletflow accounts get <account>`: TREASURY (or another system account) or a partner user id. */
export const runAccountsGet = (account: string, options: LedgerCommandOptions) =>
  runOps('accounts get', options, async (client) => {
    const { body } = await client.getAccount({ account });
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['account', body.account],
        ['balance', amountText(body.balance)],
        ['held', amountText(body.held)],
        ['available', amountText(body.available)],
      ]),
    );
  });

/**
 * `walletflow accounts adjust <account> --amount -25.00 --reason …` (Idempotency-Key printed: reuse it to retry
 * safely).
 */
export const runAccountsAdjust = (
  account: string,
  options: LedgerCommandOptions & { amount: string; reason: string; currency: string; idempotencyKey?: string },
) =>
  runOps('accounts adjust', options, async (client) => {
    const key = options.idempotencyKey ?? randomUUID();
    // Before the request: an adjustment whose answer is lost may stand, and only this key retries it once.
    sayKey('accounts adjust', key);
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
    const { body } = await client.listLedgerEntries({
      limit: Number(listQuery({ limit: options.limit }).limit),
      ...(options.account ? { account: options.account } : {}),
      ...(options.cursor ? { cursor: options.cursor } : {}),
    });
    if (options.output === 'json') return printJson(body);
    const rows = [
      ['AT', 'ACCOUNT', 'AMOUNT', 'PENDING', 'REFERENCE'],
      ...body.items.map((entry) => [
        entry.at,
        entry.account,
        amountText(entry.amount),
        entry.pending ? 'held' : '',
        entry.reference,
      ]),
    ];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

/** Problems a text report lists; past it, a line says how many more (`--output csv` has every line). */
const PROBLEMS_SHOWN = 1000;
/** How long the command waits between two questions while the run goes (each GET waits up to 5 s itself). */
const FOLLOW_PAUSE_MS = 1000;

const pause = () => new Promise((resolve) => setTimeout(resolve, FOLLOW_PAUSE_MS));

/** How long the command follows a run before it gives up saying so (a day of 100,000 items settles in minutes). */
const FOLLOW_LIMIT_MS = 60 * 60_000;

/**
 * Asks for the day's report until it is served (the first ask of a day starts its run), showing the
 * run's progress; with `fresh`, until a report at least as fresh as that run is: its own, or one of a run
 * settled after it began (another person's fresh run, or a whole-day run that replaced it after midnight).
 * The one before is served meanwhile. Answers the report's first page of `limit` items; gives up after
 * FOLLOW_LIMIT_MS (a fresh run given up by hand leaves the report before it served for good).
 */
async function followRun(
  client: OpsClient,
  date: string,
  limit: number,
  progress: CountProgress,
  fresh: { runId: string; startedAt: string } | null,
): Promise<Settlement> {
  const deadline = Date.now() + FOLLOW_LIMIT_MS;
  for (;;) {
    // As many runs of other days under way as go at once (SETTLEMENT_MAX_RUNS), or the API busy: asked again, as a
    // script settling a month day by day would want, until the follow's own limit.
    const answer = await client.getSettlement({ date, limit }).catch((error: unknown) => {
      if (error instanceof OpsProblemError && error.status === 503 && error.code === 'OVERLOADED') {
        progress.note(`the API is busy (${error.detail}); asking again`);
        return null;
      }
      throw error;
    });
    if (answer === null) {
      // Nothing to show: asked again after the pause below.
    } else if (answer.status === 202) {
      const running = answer.body as SettlementProgress;
      progress.update(running.checked, running.total);
    } else {
      const report = answer.body as Settlement;
      if (fresh === null || report.runId === fresh.runId || Date.parse(report.settledAt) > Date.parse(fresh.startedAt))
        return report;
      progress.note(`run ${fresh.runId} under way; the report before it is served until it is done`);
    }
    if (Date.now() > deadline)
      throw new CliInputError(
        `no report of ${date}${fresh ? ` from run ${fresh.runId}` : ''} after ${FOLLOW_LIMIT_MS / 60_000} minutes: ` +
          'see WalletflowSettlementStuck in docs/runbook.md, then ask again',
        exitCodes.api,
      );
    await pause();
  }
}

/**
 * `walletflow settlement-report --date YYYY-MM-DD [--fresh]`: the day's settlement report; exit 1 when anything is
 * missing or mismatched, else 4 for a report of the day so far (the day not over), 0 for the whole day.
 */
export const runSettlementReport = (options: LedgerCommandOptions & { date: string; fresh?: boolean }) =>
  runOps('settlement-report', options, async (client) => {
    // A day that is none (2026-02-30, 26-1-1) is the command's misuse, refused before any request (exit 64).
    if (!settlementDateSchema.safeParse(options.date).success)
      throw new CliInputError(
        `--date ${JSON.stringify(options.date)} is no calendar day (YYYY-MM-DD)`,
        exitCodes.usage,
      );
    const progress = createCountProgress({
      tty: process.stderr.isTTY === true,
      write: (text) => process.stderr.write(text),
      label: `settling ${options.date}`,
    });
    let report: Settlement;
    try {
      let fresh: { runId: string; startedAt: string } | null = null;
      if (options.fresh) {
        const started = await client.startSettlementRun({ date: options.date });
        fresh = { runId: started.body.runId, startedAt: started.body.startedAt };
        progress.update(started.body.checked, started.body.total);
      }
      // The JSON report is read a page at a time; the CSV and the text need only the head first.
      report = await followRun(client, options.date, options.output === 'json' ? 1000 : 1, progress, fresh);
    } finally {
      progress.close();
    }
    const clean = [report.fundings, report.payments].every((side) => side.missing === 0 && side.mismatched === 0);
    const code = !clean ? exitCodes.failed : report.complete ? exitCodes.ok : exitCodes.daySoFar;
    if (options.output === 'csv') {
      const csv = await client.getSettlement({ date: options.date, format: 'csv' });
      // A run of the day started since the report above (another person's --fresh): its progress, not a CSV.
      if (csv.status !== 200 || typeof csv.body !== 'string')
        throw new CliInputError(
          `a new run of ${options.date} started while its report was read; run the command again`,
          exitCodes.api,
        );
      // The exit code of the report printed (a fresh run that finished since the head above serves its own file), read
      // before a line is printed: a file without its totals is not printed at all.
      const fileCode = csvExitCode(csv.body);
      process.stdout.write(csv.body);
      return fileCode;
    }
    if (options.output === 'json') {
      await printReportJson(client, report);
      return code;
    }
    const side = (name: string, counts: Settlement['fundings']) => [
      name,
      String(counts.matched),
      String(counts.missing),
      String(counts.mismatched),
      String(counts.total.count),
      amountText(counts.total.amount),
    ];
    const scope = report.complete ? '' : `, the day so far (${upTo(report)})`;
    printText(
      `settlement of ${report.date} (${report.timeZone}${scope})\n${table([['', 'MATCHED', 'MISSING', 'MISMATCHED', 'COUNT', 'TOTAL'], side('fundings', report.fundings), side('payments', report.payments)])}`,
    );
    if (!clean) await printProblems(client, report);
    return code;
  });

/**
 * The whole report as one JSON document, printed once every page is read: a page that fails prints nothing (a job's
 * `> day.json` never keeps half a report), as the CSV is printed only once its totals are there. The pages are written
 * to a file of the command's own as they come, then the file to stdout: a day of 100,000 lines takes the memory of a
 * page, not of the report.
 */
async function printReportJson(client: OpsClient, first: Settlement): Promise<void> {
  const { items: _items, nextCursor: _next, ...head } = first;
  const folder = await mkdtemp(join(tmpdir(), 'walletflow-settlement-'));
  const file = join(folder, 'report.json');
  try {
    const out = createWriteStream(file, { mode: 0o600 });
    const write = async (text: string) => {
      if (!out.write(text)) await once(out, 'drain');
    };
    let page: Settlement = first;
    let written = 0;
    try {
      await write(`${JSON.stringify(head, null, 2).slice(0, -2)},\n  "items": [`);
      for (;;) {
        for (const item of page.items) await write(`${written++ === 0 ? '' : ','}\n    ${JSON.stringify(item)}`);
        if (!page.nextCursor) break;
        page = (await client.getSettlement({ date: first.date, limit: 1000, cursor: page.nextCursor }))
          .body as Settlement;
      }
      await write(`${written === 0 ? '' : '\n  '}],\n  "nextCursor": null\n}\n`);
    } finally {
      await new Promise<void>((resolve, reject) =>
        out.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
    }
    for await (const chunk of createReadStream(file)) {
      if (!process.stdout.write(chunk as Buffer)) await once(process.stdout, 'drain');
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/**
 * Exit 1 when the settlement CSV's totals lines count a line missing or mismatched; else 4 when they say the report is
 * of the day so far, 0 when of the whole day. A CSV without both is not a whole report.
 */
export function csvExitCode(csv: string): number {
  // Its last two lines (a line's quoted field may hold a line break, so never a line found elsewhere).
  const totals = csv
    .replace(/\r\n$/, '')
    .split('\r\n')
    .slice(-2)
    .map((line) => /^"total:(?:fundings|payments)",.*"matched=\d+ missing=(\d+) mismatched=(\d+)"/.exec(line));
  if (!totals.every((line) => line !== null) || totals.length !== 2)
    throw new CliInputError('the settlement CSV has no totals lines: it is not a whole report', exitCodes.api);
  if (!totals.every((line) => line?.[1] === '0' && line[2] === '0')) return exitCodes.failed;
  return totals.some((line) => line?.input.includes(`; ${DAY_SO_FAR_WORDS} (`)) ? exitCodes.daySoFar : exitCodes.ok;
}

/**
 * The lines that are not matched, at most PROBLEMS_SHOWN of them: from the first page's, then a page at a time by its
 * cursor, which names the run (a page asked for without one is the latest run's, perhaps a fresh one's since).
 */
async function printProblems(client: OpsClient, first: Settlement): Promise<void> {
  const problems: string[][] = [];
  const total = first.fundings.missing + first.fundings.mismatched + first.payments.missing + first.payments.mismatched;
  let page: Settlement = first;
  for (;;) {
    for (const item of page.items)
      if (item.result !== 'matched' && problems.length < PROBLEMS_SHOWN)
        problems.push([item.kind, item.id, item.result, item.detail ?? '']);
    if (problems.length >= PROBLEMS_SHOWN || !page.nextCursor) break;
    page = (await client.getSettlement({ date: first.date, limit: 1000, cursor: page.nextCursor })).body as Settlement;
  }
  printText(`\n${table([['KIND', 'ID', 'RESULT', 'DETAIL'], ...problems])}`);
  if (total > problems.length) printText(`… and ${total - problems.length} more: --output csv has every line`);
}
