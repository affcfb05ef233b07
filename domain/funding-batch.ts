// A funding batch's request (contract-decisions section 14): one JSON body or one CSV file of up
// to 100,000 items, every row checked before anything is stored. A bad request is answered with
// every row's problem (at most 1000 listed, and how many there are), so a person can fix the file
// in one pass instead of one error at a time. Plain data and zod only: the limits that depend on
// configuration (FUNDING_MIN, FUNDING_MAX, the per-user daily limits) are checked by the service.
import { z } from 'zod';
import { fundingRecipientSchema, fundingStatuses } from './funding.ts';
import { fundingSourceSchema } from './ledger.ts';
import { amountSchema, currencyRefusal, CURRENCY_NOT_ACCEPTED, moneyOf, type Amount, type Money } from './money.ts';

export const MAX_BATCH_ITEMS = 100_000;
/** How many row errors a 422 lists; `errorCount` says how many there are. */
export const MAX_LISTED_ROW_ERRORS = 1000;

export const batchReferenceSchema = z
  .string({ error: 'reference must be a string' })
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'reference must be 1 to 64 letters, digits, _ or -');

export const batchNameSchema = z.string({ error: 'name must be a string' }).trim().min(1, 'name must say what the batch is').max(200, 'name must be at most 200 characters');

export const batchItemSchema = z
  .object({
    reference: batchReferenceSchema,
    recipient: fundingRecipientSchema,
    amount: amountSchema,
  })
  .strict();
export type BatchItemRequest = z.infer<typeof batchItemSchema>;

/** The JSON body's frame; its items are checked one by one (checkBatchItems), not by this schema. */
export const createBatchFrameSchema = z
  .object({
    name: batchNameSchema,
    source: fundingSourceSchema.optional(),
    items: z.array(z.unknown(), { error: 'items must be an array' }).min(1, 'a batch has at least one item').max(MAX_BATCH_ITEMS, `a batch has at most ${MAX_BATCH_ITEMS} items`),
  })
  .strict();

/** The CSV file's header row, in this order. */
export const batchCsvColumns = ['reference', 'recipient_type', 'recipient', 'amount'] as const;

/** What is wrong with one row: row 1 is the first item (the CSV header is not a row). */
export interface BatchRowError {
  row: number;
  reference: string | null;
  field: string;
  code: 'INVALID' | 'DUPLICATE_REFERENCE' | typeof CURRENCY_NOT_ACCEPTED | 'AMOUNT_TOO_SMALL' | 'AMOUNT_TOO_LARGE' | 'LINK_NOT_FOUND' | 'SOURCE_NOT_RECIPIENT';
  message: string;
}

/** A checked item, its amount read once into thousandths. */
export interface BatchItem {
  row: number;
  reference: string;
  recipient: BatchItemRequest['recipient'];
  amount: Amount;
  money: Money;
}

export type BatchCheck = { ok: true; items: BatchItem[]; total: Money } | { ok: false; errors: BatchRowError[]; errorCount: number };

/**
 * Checks every item: its shape, a reference unique within the batch, one currency for the whole
 * batch (its total is held on one source), and the per-item bounds when given. Every problem of
 * every row is counted; the first MAX_LISTED_ROW_ERRORS are listed in row order.
 */
export function checkBatchItems(rawItems: readonly unknown[], bounds?: { min: bigint; max: bigint }): BatchCheck {
  const errors: BatchRowError[] = [];
  let errorCount = 0;
  const add = (error: BatchRowError) => {
    errorCount += 1;
    if (errors.length < MAX_LISTED_ROW_ERRORS) errors.push(error);
  };
  const items: BatchItem[] = [];
  const seen = new Map<string, number>();
  rawItems.forEach((raw, index) => {
    const row = index + 1;
    if (raw instanceof CsvRowProblem) {
      add({ row, reference: raw.reference || null, field: 'row', code: 'INVALID', message: raw.message });
      return;
    }
    const reference = typeof (raw as { reference?: unknown } | null)?.reference === 'string' ? (raw as { reference: string }).reference : null;
    const parsed = batchItemSchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) add({ row, reference, field: issue.path.join('.') || 'item', code: 'INVALID', message: issue.message });
      return;
    }
    const item = parsed.data;
    const first = seen.get(item.reference);
    if (first !== undefined) {
      add({ row, reference: item.reference, field: 'reference', code: 'DUPLICATE_REFERENCE', message: `reference ${item.reference} is already row ${first}` });
      return;
    }
    seen.set(item.reference, row);
    const foreign = currencyRefusal(item.amount.currency);
    if (foreign) {
      add({ row, reference: item.reference, field: 'amount.currency', code: CURRENCY_NOT_ACCEPTED, message: foreign });
      return;
    }
    const money = moneyOf(item.amount);
    if (bounds && money.thousandths < bounds.min) {
      add({ row, reference: item.reference, field: 'amount.value', code: 'AMOUNT_TOO_SMALL', message: 'the amount is below FUNDING_MIN' });
      return;
    }
    if (bounds && money.thousandths > bounds.max) {
      add({ row, reference: item.reference, field: 'amount.value', code: 'AMOUNT_TOO_LARGE', message: 'the amount is above FUNDING_MAX' });
      return;
    }
    items.push({ row, reference: item.reference, recipient: item.recipient, amount: item.amount, money });
  });
  if (errorCount > 0) return { ok: false, errors, errorCount };
  const total = items.reduce((sum, item) => sum + item.money.thousandths, 0n);
  return { ok: true, items, total: { currency: items[0]!.money.currency, thousandths: total } };
}

/**
 * Reads a batch CSV file (RFC 4180: quoted fields may hold commas, quotes doubled, CRLF or LF) into
 * the items the JSON body would carry, so both forms are checked by checkBatchItems alike. The
 * amount column is a decimal string in `currency`. A file whose header is not batchCsvColumns, or
 * that is not well-formed, is one error on row 0.
 */
export function readBatchCsv(text: string, currency: string): { ok: true; items: unknown[] } | { ok: false; error: BatchRowError } {
  // The header and at most MAX_BATCH_ITEMS rows: a file with more is refused as soon as the reading
  // gets there (a 24 MB body of two-byte lines holds 12 million of them).
  const records = csvRecords(text.replace(/^\uFEFF/, ''), MAX_BATCH_ITEMS + 1);
  if (!records.ok) return { ok: false, error: { row: 0, reference: null, field: 'file', code: 'INVALID', message: records.message } };
  const [header, ...rows] = records.rows;
  if (!header || header.map((cell) => cell.trim()).join(',') !== batchCsvColumns.join(',')) {
    return { ok: false, error: { row: 0, reference: null, field: 'header', code: 'INVALID', message: `the first line must be ${batchCsvColumns.join(',')}` } };
  }
  const items = rows.map((cells) => {
    const [reference = '', type = '', recipient = '', amount = ''] = cells.map((cell) => cell.trim());
    if (cells.length !== batchCsvColumns.length) return new CsvRowProblem(reference, `a row has ${batchCsvColumns.length} columns (${batchCsvColumns.join(',')}), not ${cells.length}`);
    const recipientValue = type === 'CODE' ? { type, code: recipient } : type === 'TOKEN' ? { type, linkId: recipient } : { type };
    return { reference, recipient: recipientValue, amount: { currency, value: amount } };
  });
  if (items.length > MAX_BATCH_ITEMS) {
    return { ok: false, error: { row: 0, reference: null, field: 'file', code: 'INVALID', message: `a batch has at most ${MAX_BATCH_ITEMS} items` } };
  }
  return { ok: true, items };
}

/** A CSV line that cannot be an item at all (another number of columns): reported on its row. */
export class CsvRowProblem {
  constructor(
    readonly reference: string,
    readonly message: string,
  ) {}
}

function csvRecords(text: string, maxRows: number): { ok: true; rows: string[][] } | { ok: false; message: string } {
  const tooMany = { ok: false as const, message: `a batch has at most ${maxRows - 1} items` };
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStarted = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (char === '"') {
        quoted = false;
        if (i + 1 < text.length && !',\r\n'.includes(text[i + 1]!)) return { ok: false, message: `line ${rows.length + 1}: text after a closing quote` };
      } else field += char;
      continue;
    }
    if (char === '"' && !fieldStarted) {
      quoted = true;
      fieldStarted = true;
    } else if (char === ',') {
      row.push(field);
      field = '';
      fieldStarted = false;
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i += 1;
      row.push(field);
      if (!(row.length === 1 && row[0] === '')) rows.push(row);
      if (rows.length > maxRows) return tooMany;
      row = [];
      field = '';
      fieldStarted = false;
    } else {
      field += char;
      fieldStarted = true;
    }
  }
  if (quoted) return { ok: false, message: 'a quoted field is not closed' };
  row.push(field);
  if (!(row.length === 1 && row[0] === '')) rows.push(row);
  if (rows.length > maxRows) return tooMany;
  return { ok: true, rows };
}

export const batchStates = ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED', 'REJECTED'] as const;
export type BatchState = (typeof batchStates)[number];

/** Each state and the states it may be reached from (contract-decisions section 14). */
export const batchTransitions = {
  AWAITING_APPROVAL: [],
  RUNNING: ['AWAITING_APPROVAL', 'PAUSED'],
  PAUSED: ['RUNNING'],
  COMPLETED: ['RUNNING'],
  CANCELLED: ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED'],
  REJECTED: ['AWAITING_APPROVAL'],
} as const satisfies Record<BatchState, readonly BatchState[]>;

/** A batch whose items may still start: the sweep leaves its PENDING items to it. */
export const activeBatchStates = ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED'] as const satisfies readonly BatchState[];

/** An item's state as a batch counts it: a funding status, or CANCELLED (FAILED before it started, by the batch's cancel). */
export const batchItemStatuses = [...fundingStatuses, 'CANCELLED'] as const;
export type BatchItemStatus = (typeof batchItemStatuses)[number];

const amountView = z.object({ currency: z.string(), value: z.string() });

export const batchViewSchema = z.object({
  batchId: z.string(),
  name: z.string(),
  state: z.enum(batchStates),
  createdBy: z.string(),
  approvedBy: z.string().nullable(),
  source: fundingSourceSchema,
  total: z.object({ count: z.number().int(), amount: amountView }),
  counts: z.partialRecord(z.enum(batchItemStatuses), z.number().int()),
  amounts: z.partialRecord(z.enum(batchItemStatuses), amountView),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  /** Items finished per second since the batch started (null before it started). */
  itemsPerSecond: z.number().nullable(),
  /** Seconds until every item is done at that rate (null when unknown or done). */
  etaSeconds: z.number().nullable(),
});
export type BatchView = z.infer<typeof batchViewSchema>;

export const batchItemViewSchema = z.object({
  reference: z.string(),
  fundingId: z.string(),
  status: z.enum(batchItemStatuses),
  errorCode: z.string().nullable(),
  amount: amountView,
});
export type BatchItemView = z.infer<typeof batchItemViewSchema>;
