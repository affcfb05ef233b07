// `walletflow batches create|list|get|items|approve|reject|pause|resume|cancel|report|watch`:
// funding batches through the ops API (contract-decisions section 14). `create --file` reads the
// CSV with the API's own reader (domain/funding-batch.ts) and sends its items; a 422 prints the
// validation report, one line per bad row. `watch` follows a batch with a live progress bar.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FundingBatch, OpsClient } from '../client/ops-client.generated.ts';
import { readBatchCsv, rowErrorAsShown } from '../domain/funding-batch.ts';
import { exitCodes } from './exit-codes.ts';
import { OpsProblemError } from './ops-client.ts';
import { amountText, printJson, printText, runOps, sayKey, table, type OpsCommandOptions } from './output.ts';

export interface BatchCreateOptions extends OpsCommandOptions {
  file: string;
  name?: string;
  /** `TREASURY` (the default) or `USER_BALANCE:<partnerUserId>`. */
  source?: string;
  idempotencyKey?: string;
}

const doneStates = new Set(['COMPLETED', 'CANCELLED', 'REJECTED']);
/** How long `batches create` waits for the API's answer: past the store's five minutes. */
const BATCH_CREATE_ANSWER_MS = 330_000;

export function formatBatch(batch: FundingBatch): string {
  const fields = [
    ['batch', batch.batchId],
    ['name', batch.name],
    ['state', batch.state],
    ['source', batch.source.type === 'TREASURY' ? 'TREASURY' : `USER:${batch.source.partnerUserId}`],
    ['total', `${batch.total.count} items, ${amountText(batch.total.amount)}`],
    ['created', `${batch.createdAt} by ${batch.createdBy}`],
    ['approved', batch.approvedBy ?? '-'],
    ['started', batch.startedAt ?? '-'],
    ['completed', batch.completedAt ?? '-'],
    ['rate', batch.itemsPerSecond === null ? '-' : `${batch.itemsPerSecond} items/s`],
    ['eta', batch.etaSeconds === null ? '-' : `${batch.etaSeconds} s`],
  ];
  const byState = [
    ['STATE', 'ITEMS', 'AMOUNT'],
    ...Object.entries(batch.counts).map(([state, count]) => [
      state,
      String(count),
      amountText(batch.amounts[state as keyof typeof batch.amounts]),
    ]),
  ];
  return `${table(fields)}\n\n${table(byState)}\n`;
}

/** One line of progress: a bar, done/total, the rate, the ETA and the counts by state. */
export function progressLine(batch: FundingBatch, width = 24): string {
  const waiting = ['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING'].reduce(
    (sum, state) => sum + (batch.counts[state as keyof typeof batch.counts] ?? 0),
    0,
  );
  const done = batch.total.count - waiting;
  const filled = batch.total.count === 0 ? width : Math.round((done / batch.total.count) * width);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
  const rate = batch.itemsPerSecond === null ? '' : `  ${batch.itemsPerSecond}/s`;
  const eta = batch.etaSeconds === null ? '' : `  ETA ${batch.etaSeconds}s`;
  const counts = Object.entries(batch.counts)
    .filter(([, count]) => (count ?? 0) > 0)
    .map(([state, count]) => `${state} ${count}`)
    .join(' · ');
  return `${bar} ${done}/${batch.total.count}${rate}${eta}  ${batch.state}  ${counts}`;
}

/** The source flag: TREASURY, or USER_BALANCE:<partnerUserId>. */
function sourceOf(
  flag: string | undefined,
): { type: 'TREASURY' } | { type: 'USER_BALANCE'; partnerUserId: string } | null {
  if (flag === undefined || flag === 'TREASURY') return { type: 'TREASURY' };
  const match = /^USER_BALANCE:(.+)$/.exec(flag);
  return match?.[1] ? { type: 'USER_BALANCE', partnerUserId: match[1] } : null;
}

export const runBatchesCreate = (options: BatchCreateOptions) =>
  runOps(
    'batches create',
    options,
    async (client) => {
      const source = sourceOf(options.source);
      if (!source) {
        process.stderr.write('walletflow batches create: --source is TREASURY or USER_BALANCE:<partnerUserId>\n');
        return exitCodes.usage;
      }
      let text: string;
      try {
        text = await readFile(options.file, 'utf8');
      } catch (error) {
        process.stderr.write(`walletflow batches create: cannot read ${options.file}: ${(error as Error).message}\n`);
        return exitCodes.usage;
      }
      const read = readBatchCsv(text, 'PHP');
      const idempotencyKey = options.idempotencyKey ?? randomUUID();
      if (!read.ok) return printReport([read.error], 1);
      // Before the request: an attempt that gets no answer (a large batch takes a while to store) may have stored it,
      // and only this key retries it without paying every row twice.
      sayKey('batches create', idempotencyKey);
      try {
        const name = options.name ?? options.file.replace(/^.*\//, '').replace(/\.csv$/i, '');
        const body = { name, ...(source.type === 'USER_BALANCE' ? { source } : {}), items: read.items } as Parameters<
          OpsClient['createFundingBatch']
        >[0]['body'];
        const { body: batch } = await client.createFundingBatch({ idempotencyKey, body });
        if (options.output === 'json') return printJson(batch);
        printText(`${formatBatch(batch)}\nidempotency key: ${idempotencyKey} (send it again to retry safely)\n`);
      } catch (error) {
        const problem =
          error instanceof OpsProblemError
            ? (error.problem as
                | {
                    code?: string;
                    errors?: Array<{
                      row: number;
                      reference: string | null;
                      field: string;
                      code: string;
                      message: string;
                    }>;
                    errorCount?: number;
                  }
                | undefined)
            : undefined;
        if (problem?.code === 'BATCH_INVALID' && problem.errors)
          return printReport(problem.errors, problem.errorCount ?? problem.errors.length);
        throw error;
      }
    },
    // Storing 100,000 items takes tens of seconds, its transaction up to five minutes (fundings/batch-record.ts): the
    // command waits for its answer as long.
    { timeoutMs: BATCH_CREATE_ANSWER_MS },
  );

function printReport(
  errors: Array<{ row: number; reference: string | null; field: string; code: string; message: string }>,
  errorCount: number,
): number {
  const rows = [
    ['ROW', 'REFERENCE', 'FIELD', 'CODE', 'PROBLEM'],
    ...errors
      .map(rowErrorAsShown)
      .map((error) => [String(error.row), error.reference ?? '-', error.field, error.code, error.message]),
  ];
  process.stderr.write(
    `walletflow batches create: ${errorCount} problem${errorCount === 1 ? '' : 's'} in the file; nothing was stored (row 1 is the first line after the header)\n${table(rows)}\n`,
  );
  return exitCodes.failed;
}

export const runBatchesList = (options: OpsCommandOptions & { state?: string; limit?: string; cursor?: string }) =>
  runOps('batches list', options, async (client) => {
    const { body } = await client.listFundingBatches({
      ...(options.state ? { state: options.state as FundingBatch['state'] } : {}),
      ...(options.limit ? { limit: Number(options.limit) } : {}),
      ...(options.cursor ? { cursor: options.cursor } : {}),
    });
    if (options.output === 'json') return printJson(body);
    const rows = [
      ['CREATED', 'BATCH', 'STATE', 'ITEMS', 'TOTAL', 'NAME'],
      ...body.items.map((batch) => [
        batch.createdAt,
        batch.batchId,
        batch.state,
        String(batch.total.count),
        amountText(batch.total.amount),
        batch.name,
      ]),
    ];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

const show = (options: OpsCommandOptions, batch: FundingBatch) =>
  options.output === 'json' ? printJson(batch) : printText(formatBatch(batch));

export const runBatchesGet = (batchId: string, options: OpsCommandOptions) =>
  runOps('batches get', options, async (client) => show(options, (await client.getFundingBatch({ batchId })).body));

export const runBatchesItems = (
  batchId: string,
  options: OpsCommandOptions & { status?: string; limit?: string; cursor?: string },
) =>
  runOps('batches items', options, async (client) => {
    const { body } = await client.listFundingBatchItems({
      batchId,
      ...(options.status ? { status: options.status as never } : {}),
      ...(options.limit ? { limit: Number(options.limit) } : {}),
      ...(options.cursor ? { cursor: options.cursor } : {}),
    });
    if (options.output === 'json') return printJson(body);
    const rows = [
      ['REFERENCE', 'FUNDING', 'STATUS', 'ERROR', 'AMOUNT'],
      ...body.items.map((item) => [
        item.reference,
        item.fundingId,
        item.status,
        item.errorCode ?? '-',
        amountText(item.amount),
      ]),
    ];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

type Move =
  'approveFundingBatch' | 'rejectFundingBatch' | 'pauseFundingBatch' | 'resumeFundingBatch' | 'cancelFundingBatch';
export const runBatchesMove = (move: Move, command: string) => (batchId: string, options: OpsCommandOptions) =>
  runOps(`batches ${command}`, options, async (client) => show(options, (await client[move]({ batchId })).body));

export const runBatchesReport = (batchId: string, options: OpsCommandOptions) =>
  runOps('batches report', options, async (client) => {
    const { body } = await client.getFundingBatchReport({ batchId, format: 'csv' });
    process.stdout.write(typeof body === 'string' ? body : String(body));
  });

/** Follows a batch until it is done: a live bar on a terminal, a line every few seconds otherwise. */
export const runBatchesWatch = (batchId: string, options: OpsCommandOptions & { interval?: string }) =>
  runOps('batches watch', options, async (client) => {
    const intervalMs = Math.max(200, Number(options.interval ?? '1') * 1000);
    const live = process.stdout.isTTY === true && options.output !== 'json';
    let lastPrinted = 0;
    for (;;) {
      const { body: batch } = await client.getFundingBatch({ batchId });
      const done = doneStates.has(batch.state);
      if (options.output === 'json') {
        if (done) return printJson(batch);
      } else if (live) {
        process.stdout.write(`\r\u001b[2K${progressLine(batch)}`);
        if (done) process.stdout.write('\n');
      } else if (done || Date.now() - lastPrinted >= 5000) {
        process.stdout.write(`${progressLine(batch)}\n`);
        lastPrinted = Date.now();
      }
      if (done) return batch.state === 'COMPLETED' ? exitCodes.ok : exitCodes.failed;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  });
