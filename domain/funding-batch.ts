// A funding batch's request (contract-decisions section 14): one JSON body or one CSV file of up
// to 100,000 items, every row checked before anything is stored. A bad request is answered with
// every row's problem (at most 1000 listed, and how many there are), so a person can fix the file
// in one pass instead of one error at a time. Plain data and zod only: the limits that depend on
// configuration (FUNDING_MIN, FUNDING_MAX, the per-user daily limits) are checked by the service.
import type { TransitionTable } from './transitions.ts';
import { z } from 'zod';
import { fundingRecipientSchema, fundingStatuses, maskCashInCode } from './funding.ts';
import { fundingSourceSchema } from './ledger.ts';
import { plainTextSchema } from './plain-text.ts';
import {
  amountOf,
  amountSchema,
  currencyRefusal,
  CURRENCY_NOT_ACCEPTED,
  moneyOf,
  type Amount,
  type Money,
} from './money.ts';

export const MAX_BATCH_ITEMS = 100_000;
/** How many row errors a 422 lists; `errorCount` says how many there are. */
export const MAX_LISTED_ROW_ERRORS = 1000;

/** A batch item's reference: 1 to 64 letters, digits, _ or - (also the items' page cursor). */
export const batchReferencePattern = /^[A-Za-z0-9_-]{1,64}$/;

export const batchReferenceSchema = z
  .string({ error: 'reference must be a string' })
  .regex(batchReferencePattern, 'reference must be 1 to 64 letters, digits, _ or -');

export const batchNameSchema = plainTextSchema('name', { empty: 'say what the batch is', max: 200 });

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
    items: z
      .array(z.unknown(), { error: 'items must be an array' })
      .min(1, 'a batch has at least one item')
      .max(MAX_BATCH_ITEMS, `a batch has at most ${MAX_BATCH_ITEMS} items`),
  })
  .strict();

/** The CSV file's header row, in this order. */
export const batchCsvColumns = ['reference', 'recipient_type', 'recipient', 'amount'] as const;

/** What is wrong with one row: row 1 is the first item (the CSV header is not a row). */
export interface BatchRowError {
  row: number;
  reference: string | null;
  field: string;
  code:
    | 'INVALID'
    | 'DUPLICATE_REFERENCE'
    | typeof CURRENCY_NOT_ACCEPTED
    | 'AMOUNT_TOO_SMALL'
    | 'AMOUNT_TOO_LARGE'
    | 'LINK_NOT_FOUND'
    | 'SOURCE_NOT_RECIPIENT';
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

export type BatchCheck =
  { ok: true; items: BatchItem[]; total: Money } | { ok: false; errors: BatchRowError[]; errorCount: number };

/**
 * A batch's checked items in a compact form, one column per field (a batch of 100,000 is held
 * while it is stored: about 20 MB this way, against several times that as objects), in row order;
 * `at` and iteration give each as a BatchItem.
 */
export class CheckedBatchItems implements Iterable<BatchItem> {
  /** Each item's row: its index + 1 in a batch with no bad row; a bad batch's good rows skip the bad ones. */
  private readonly rows: number[] = [];
  private readonly references: string[] = [];
  /** The CODE or the TOKEN's link id. */
  private readonly recipients: string[] = [];
  private readonly tokens: boolean[] = [];
  /** Thousandths: exact in a double (amountSchema's largest is 9,999,999,999,990). */
  private readonly thousandths: number[] = [];
  total = 0n;

  constructor(readonly currency: Money['currency']) {}

  get length(): number {
    return this.references.length;
  }

  push(item: { row: number; reference: string; recipient: BatchItemRequest['recipient']; money: Money }): void {
    this.rows.push(item.row);
    this.references.push(item.reference);
    this.recipients.push(item.recipient.type === 'CODE' ? item.recipient.code : item.recipient.linkId);
    this.tokens.push(item.recipient.type === 'TOKEN');
    this.thousandths.push(Number(item.money.thousandths));
    this.total += item.money.thousandths;
  }

  at(index: number): BatchItem {
    const money: Money = { currency: this.currency, thousandths: BigInt(this.thousandths[index]!) };
    const recipient: BatchItemRequest['recipient'] = this.tokens[index]
      ? { type: 'TOKEN', linkId: this.recipients[index]! }
      : { type: 'CODE', code: this.recipients[index]! };
    return { row: this.rows[index]!, reference: this.references[index]!, recipient, amount: amountOf(money), money };
  }

  *[Symbol.iterator](): Iterator<BatchItem> {
    for (let index = 0; index < this.length; index += 1) yield this.at(index);
  }
}

/** How much of what a row sent a listed error repeats: a reference, a field's path, a message naming keys. */
const MAX_ERROR_TEXT = { reference: 80, field: 80, message: 300 } as const;
const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Whether `text` holds `code` as seven digits standing alone (not inside a longer number). */
const holdsCode = (text: string, code: string): boolean => text.split(/\D+/).some((digits) => digits === code);

/** A run of seven digits standing alone (not part of a longer number or an amount): it may be a cash-in code. */
const codeLike = /(?<![\d.,])\d{7}(?![\d.,])/g;

/**
 * A row error as it is shown (the API's 422, the console, the CLI): a reference or a run of seven digits in its words
 * may be a cash-in code (a file whose columns slipped puts one first; a parser's words repeat what it met), and a code
 * is never shown whole (contract-decisions section 3): all but its last two digits masked.
 */
export function rowErrorAsShown<E extends Pick<BatchRowError, 'reference' | 'field' | 'message'>>(error: E): E {
  const masked = (text: string) => text.replace(codeLike, maskCashInCode);
  return {
    ...error,
    reference: error.reference === null ? null : masked(error.reference),
    field: masked(error.field),
    message: masked(error.message),
  };
}

/** A row error as listed: what it repeats of the row cut short, so 1,000 of them stay small whatever the rows held. */
function boundedRowError(unmasked: BatchRowError): BatchRowError {
  // Masked before it is cut: a code the cut went through would keep more than its last two digits.
  const error = rowErrorAsShown(unmasked);
  return {
    ...error,
    reference: error.reference === null ? null : cut(error.reference, MAX_ERROR_TEXT.reference),
    field: cut(error.field, MAX_ERROR_TEXT.field),
    message: cut(error.message, MAX_ERROR_TEXT.message),
  };
}

/**
 * Checks items one at a time, as they are read: its shape, a reference unique within the batch,
 * the accepted currency (acceptedCurrency: the batch's total is held on one source), and the per-item bounds
 * when given. Every problem of every row is counted, the first MAX_LISTED_ROW_ERRORS listed in row
 * order; every good item is kept in the compact form, a bad batch's too (its good rows' recipients are checked
 * after the reading: `goodItems`).
 */
export function createBatchItemChecker(bounds?: { min: bigint; max: bigint }) {
  const errors: BatchRowError[] = [];
  let errorCount = 0;
  let row = 0;
  let items: CheckedBatchItems | null = null;
  /** Each reference's first row. */
  const seen = new Map<string, number>();
  const add = (error: BatchRowError) => {
    errorCount += 1;
    if (errors.length < MAX_LISTED_ROW_ERRORS) errors.push(boundedRowError(error));
  };
  /**
   * Whether the current row's reference is an earlier row's (then named as a problem of this row), else it is recorded
   * as this row's: a bad row's reference too, so a good row repeating it is named in the same answer, not in the one
   * after the bad row is mended. Only a reference that is one (batchReferencePattern): a blank or a filler line's
   * first cell is no reference to repeat, and a reference is at most 64 characters (what the upload budget charges
   * each row for).
   */
  const repeats = (reference: string): boolean => {
    if (!batchReferencePattern.test(reference)) return false;
    const first = seen.get(reference);
    if (first === undefined) {
      seen.set(reference, row);
      return false;
    }
    add({
      row,
      reference,
      field: 'reference',
      code: 'DUPLICATE_REFERENCE',
      message: `reference ${reference} is already row ${first}`,
    });
    return true;
  };
  return {
    /** Items seen so far, good or bad. */
    get count(): number {
      return row;
    },
    get errorCount(): number {
      return errorCount;
    },
    /** The problems found so far: the first MAX_LISTED_ROW_ERRORS, and how many. */
    problems(): { errors: BatchRowError[]; errorCount: number } {
      return { errors: [...errors], errorCount };
    },
    add(raw: unknown): void {
      row += 1;
      if (raw instanceof CsvRowProblem) {
        add({ row, reference: raw.reference || null, field: 'row', code: 'INVALID', message: raw.message });
        if (raw.reference) repeats(raw.reference);
        return;
      }
      const reference =
        typeof (raw as { reference?: unknown } | null)?.reference === 'string'
          ? (raw as { reference: string }).reference
          : null;
      const parsed = batchItemSchema.safeParse(raw);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          add({ row, reference, field: issue.path.join('.') || 'item', code: 'INVALID', message: issue.message });
        if (reference !== null) repeats(reference);
        return;
      }
      const item = parsed.data;
      if (repeats(item.reference)) return;
      if (item.recipient.type === 'CODE' && holdsCode(item.reference, item.recipient.code)) {
        // A reference is stored and shown as it is (the items, the report, the console); a code never is whole.
        add({
          row,
          reference: item.reference,
          field: 'reference',
          code: 'INVALID',
          message: 'the reference holds the row’s cash-in code: a code is a secret, never a reference',
        });
        return;
      }
      const foreign = currencyRefusal(item.amount.currency);
      if (foreign) {
        add({
          row,
          reference: item.reference,
          field: 'amount.currency',
          code: CURRENCY_NOT_ACCEPTED,
          message: foreign,
        });
        return;
      }
      const money = moneyOf(item.amount);
      if (bounds && money.thousandths < bounds.min) {
        add({
          row,
          reference: item.reference,
          field: 'amount.value',
          code: 'AMOUNT_TOO_SMALL',
          message: 'the amount is below FUNDING_MIN',
        });
        return;
      }
      if (bounds && money.thousandths > bounds.max) {
        add({
          row,
          reference: item.reference,
          field: 'amount.value',
          code: 'AMOUNT_TOO_LARGE',
          message: 'the amount is above FUNDING_MAX',
        });
        return;
      }
      // Kept even once a row is bad: the good rows' recipients are checked too (their links, the source's rule), so
      // that one answer names every bad row; nothing of a bad batch is stored.
      items ??= new CheckedBatchItems(money.currency);
      items.push({ row, reference: item.reference, recipient: item.recipient, money });
    },
    /** Every item checked: the items and their total, or every problem. */
    result():
      | { ok: true; items: CheckedBatchItems; total: Money }
      | { ok: false; errors: BatchRowError[]; errorCount: number; goodItems?: CheckedBatchItems } {
      if (errorCount > 0) return { ok: false, errors, errorCount, ...(items ? { goodItems: items } : {}) };
      if (!items)
        return {
          ok: false,
          errors: [
            { row: 0, reference: null, field: 'items', code: 'INVALID', message: 'a batch has at least one item' },
          ],
          errorCount: 1,
        };
      return { ok: true, items, total: { currency: items.currency, thousandths: items.total } };
    },
  };
}

/**
 * Two checks' problems of one batch as one answer: every problem counted, the first MAX_LISTED_ROW_ERRORS of both in
 * row order. Where `first` listed fewer than it counted, none of `then` past its last listed row is listed: a problem
 * of `first` it did not list may come before it. (The other way needs no cut: a check that lists fewer than it counts
 * lists MAX_LISTED_ROW_ERRORS, and those come before any row of `first` past its last.)
 */
export function mergeRowProblems(
  first: { errors: readonly BatchRowError[]; errorCount: number },
  then: { errors: readonly BatchRowError[]; errorCount: number },
): { errors: BatchRowError[]; errorCount: number } {
  const cut = first.errors.length < first.errorCount ? (first.errors.at(-1)?.row ?? 0) : Infinity;
  const errors = [...first.errors, ...then.errors.filter((error) => error.row <= cut)]
    .map((error, order) => ({ error, order }))
    .sort((a, b) => a.error.row - b.error.row || a.order - b.order)
    .slice(0, MAX_LISTED_ROW_ERRORS)
    .map(({ error }) => error);
  return { errors, errorCount: first.errorCount + then.errorCount };
}

/**
 * Checks every item of a list (createBatchItemChecker, one after the other): every problem of
 * every row is counted; the first MAX_LISTED_ROW_ERRORS are listed in row order.
 */
export function checkBatchItems(rawItems: readonly unknown[], bounds?: { min: bigint; max: bigint }): BatchCheck {
  const checker = createBatchItemChecker(bounds);
  for (const raw of rawItems) checker.add(raw);
  const result = checker.result();
  return result.ok ? { ok: true, items: [...result.items], total: result.total } : result;
}

/**
 * A body that is refused while it is read: the one problem that stopped the reading (row 0: the file or body itself).
 */
export class BatchReadRefusal extends Error {
  constructor(readonly error: BatchRowError) {
    super(error.message);
    this.name = 'BatchReadRefusal';
  }
}

/** The longest CSV line read (a good row is under 150 characters): a longer one is refused as it is read. */
export const MAX_CSV_LINE = 1024;

const tooManyItems = (): BatchRowError => ({
  row: 0,
  reference: null,
  field: 'file',
  code: 'INVALID',
  message: `a batch has at most ${MAX_BATCH_ITEMS} items`,
});

/**
 * Reads a batch CSV file as it arrives, text chunk by text chunk (RFC 4180: quoted fields may hold
 * commas, quotes doubled, CRLF or LF), handing each row to `onItem` as the item the JSON body would
 * carry (or a CsvRowProblem: a row with too few columns), so both forms are checked alike. The
 * amount column is a decimal string in `currency`. What cannot be read on throws BatchReadRefusal
 * at once, so nothing past it is read: a header that is not batchCsvColumns (row 0), a row with
 * more fields than the header (named by its row: a 32 MB line of commas stops at its fifth field),
 * a line longer than MAX_CSV_LINE, the 100,001st row, a quote left open or text after a closing one.
 */
export function createBatchCsvReader(currency: string, onItem: (raw: unknown) => void) {
  const columns = batchCsvColumns.length;
  let header: string[] | null = null;
  let rows = 0;
  let cells: string[] = [];
  let field = '';
  let quoted = false;
  let fieldStarted = false;
  /** The last character was the closing quote of a field. */
  let closed = false;
  /** The last character was a CR: an LF right after it ends nothing more. */
  let afterCr = false;
  let lineLength = 0;
  let first = true;
  const refuse = (error: BatchRowError): never => {
    throw new BatchReadRefusal(error);
  };
  const fileError = (message: string) => refuse({ row: 0, reference: null, field: 'file', code: 'INVALID', message });

  const endField = () => {
    cells.push(field);
    field = '';
    fieldStarted = false;
    closed = false;
    if (header && cells.length > columns) {
      const row = rows + 1;
      refuse({
        row,
        reference: cells[0]!.trim() || null,
        field: 'row',
        code: 'INVALID',
        message: `row ${row} has more fields than the header's ${columns} (${batchCsvColumns.join(',')}): the file was not read further`,
      });
    }
  };
  const endLine = () => {
    endField();
    lineLength = 0;
    const line = cells;
    cells = [];
    if (line.length === 1 && line[0] === '') return;
    if (!header) {
      header = line;
      if (header.map((cell) => cell.trim()).join(',') !== batchCsvColumns.join(',')) {
        refuse({
          row: 0,
          reference: null,
          field: 'header',
          code: 'INVALID',
          message: `the first line must be ${batchCsvColumns.join(',')}`,
        });
      }
      return;
    }
    rows += 1;
    if (rows > MAX_BATCH_ITEMS) refuse(tooManyItems());
    const [reference = '', type = '', recipient = '', amount = ''] = line.map((cell) => cell.trim());
    if (line.length !== columns) {
      onItem(
        new CsvRowProblem(reference, `a row has ${columns} columns (${batchCsvColumns.join(',')}), not ${line.length}`),
      );
      return;
    }
    const recipientValue =
      type === 'CODE' ? { type, code: recipient } : type === 'TOKEN' ? { type, linkId: recipient } : { type };
    onItem({ reference, recipient: recipientValue, amount: { currency, value: amount } });
  };

  return {
    write(text: string): void {
      let start = 0;
      if (first && text.length > 0) {
        first = false;
        if (text.charCodeAt(0) === 0xfeff) start = 1;
      }
      for (let i = start; i < text.length; i += 1) {
        const char = text[i]!;
        const cr = afterCr;
        afterCr = false;
        lineLength += 1;
        if (lineLength > MAX_CSV_LINE) {
          const row = rows + 1;
          refuse(
            header
              ? {
                  row,
                  reference: null,
                  field: 'row',
                  code: 'INVALID',
                  message: `row ${row} is longer than ${MAX_CSV_LINE} characters: the file was not read further`,
                }
              : {
                  row: 0,
                  reference: null,
                  field: 'header',
                  code: 'INVALID',
                  message: `the first line must be ${batchCsvColumns.join(',')}`,
                },
          );
        }
        if (quoted) {
          if (char === '"') {
            // A doubled quote or the closing one: which, the next character says.
            quoted = false;
            closed = true;
          } else field += char;
          continue;
        }
        if (closed && char === '"') {
          // "" inside a quoted field: one quote, and the field goes on.
          field += '"';
          quoted = true;
          closed = false;
          continue;
        }
        if (closed && char !== ',' && char !== '\r' && char !== '\n')
          fileError(`line ${rows + (header ? 2 : 1)}: text after a closing quote`);
        if (char === '"' && !fieldStarted) {
          quoted = true;
          fieldStarted = true;
        } else if (char === ',') {
          endField();
        } else if (char === '\n') {
          // The LF of a CRLF: the line already ended at its CR.
          if (!cr) endLine();
        } else if (char === '\r') {
          endLine();
          afterCr = true;
        } else {
          field += char;
          fieldStarted = true;
        }
      }
    },
    /** The end of the file: the last line (with or without its line break). */
    end(): void {
      if (quoted) fileError('a quoted field is not closed');
      endLine();
      if (!header)
        refuse({
          row: 0,
          reference: null,
          field: 'header',
          code: 'INVALID',
          message: `the first line must be ${batchCsvColumns.join(',')}`,
        });
    },
    /** Rows read so far (the header not counted). */
    get rows(): number {
      return rows;
    },
    /** The characters held of the line being read (at most MAX_CSV_LINE). */
    get heldBytes(): number {
      return lineLength;
    },
  };
}

/**
 * Reads a whole batch CSV file (createBatchCsvReader) into the items the JSON body would carry.
 * A file that cannot be read (its header, its form, too many rows or fields) is one error.
 */
export function readBatchCsv(
  text: string,
  currency: string,
): { ok: true; items: unknown[] } | { ok: false; error: BatchRowError } {
  const items: unknown[] = [];
  const reader = createBatchCsvReader(currency, (item) => items.push(item));
  try {
    reader.write(text);
    reader.end();
  } catch (error) {
    if (error instanceof BatchReadRefusal) return { ok: false, error: error.error };
    throw error;
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

export const batchStates = ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED', 'REJECTED'] as const;
export type BatchState = (typeof batchStates)[number];

/**
 * Each state and the states it may move to (contract-decisions section 14), read in the same
 * direction as the funding's and the payment's tables (domain/transitions.ts): the batch record
 * guards every move with it.
 */
export const batchTransitions = {
  AWAITING_APPROVAL: ['RUNNING', 'CANCELLED', 'REJECTED'],
  RUNNING: ['PAUSED', 'COMPLETED', 'CANCELLED'],
  PAUSED: ['RUNNING', 'CANCELLED'],
  COMPLETED: [],
  CANCELLED: [],
  REJECTED: [],
} as const satisfies TransitionTable<BatchState>;

/** A batch whose items may still start: the sweep leaves its PENDING items to it. */
export const activeBatchStates = ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED'] as const satisfies readonly BatchState[];

/**
 * An item's state as a batch counts it: a funding status, or CANCELLED (FAILED before it started, by the batch's
 * cancel).
 */
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
