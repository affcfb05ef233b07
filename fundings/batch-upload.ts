// A funding batch's upload read as it arrives (contract-decisions section 14; docs/security.md,
// upload limits): the request body is never held whole nor parsed whole. A CSV file goes through
// the streaming CSV reader of domain/funding-batch.ts, a JSON body through a streaming JSON parser
// that hands over one item at a time (@streamparser/json, a tokenizer with no dependencies); each
// item is checked as it arrives and kept only in its compact form (CheckedBatchItems). What cannot
// be a batch is refused as soon as it is seen, and nothing past it is read: a body past
// BATCH_BODY_LIMIT bytes (413), the 100,001st item, a CSV row with more fields than the header or a
// line past its limit, JSON of any shape a batch does not have (batch-json-bounds.ts: a member
// outside items, items that are not an array, an item, member, string, key or number past its
// byte bound, deep nesting; 422 BATCH_INVALID), a JSON syntax error (400). Each upload holds a
// share of the process's upload budget while it is read and stored (the chunk being read, the
// item, member or line being read, and a fixed share per item read); past it the upload is refused
// (503 OVERLOADED), so concurrent uploads cannot run the API out of memory.
import { Tokenizer, TokenizerError, TokenParser, TokenParserError, type ParsedElementInfo } from '@streamparser/json';
import {
  BatchReadRefusal,
  createBatchCsvReader,
  createBatchFrameSchema,
  createBatchItemChecker,
  MAX_BATCH_ITEMS,
  MAX_LISTED_ROW_ERRORS,
  type BatchRowError,
  type CheckedBatchItems,
} from '../domain/funding-batch.ts';
import type { FundingSource } from '../domain/ledger.ts';
import type { Money } from '../domain/money.ts';
import type { UploadShare } from '../lib/upload-budget.ts';
import { createJsonBatchBounds } from './batch-json-bounds.ts';

/**
 * 100,000 items of JSON at their largest (64-character references, TOKEN recipients, pretty-printed:
 * 27.9 MB), with room; the CSV form is about half.
 */
export const BATCH_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * What one item read costs the upload budget: its compact form (CheckedBatchItems: a reference, a
 * recipient and an amount in columns) and its place in the duplicate-reference map, measured at
 * about 100 bytes of heap an item for 100,000 items of 12-character references; with room for
 * longer references and TOKEN recipients, and its row. Charged for every item read, a good one or not: a good one is
 * kept after a bad row too (its recipient is checked after the reading), and a bad one's reference goes into the map
 * (duplicates are reported).
 */
export const UPLOAD_BYTES_PER_ITEM = 256;

/**
 * What the API's batch uploads may hold at once (lib/upload-budget.ts): the compact form of about
 * 250,000 items across the uploads being read and stored, a few full-size batches at a time.
 */
export const BATCH_UPLOAD_BUDGET_BYTES = 64 * 1024 * 1024;

/** The most bytes handed to a reader at once: a huge chunk is read in pieces, each checked before the next. */
const MAX_WRITE_BYTES = 64 * 1024;

/** How the upload came: a JSON body (the frame inside it), or a CSV file with the frame from the query. */
export type BatchUploadForm =
  { kind: 'json' } | { kind: 'csv'; name: unknown; source?: FundingSource; currency: string };

export type BatchUploadRead =
  | { ok: true; name: string; source: FundingSource | undefined; items: CheckedBatchItems; total: Money }
  /**
   * 422 BATCH_INVALID: what is wrong with which rows (row 0: the request or the file itself); with the good rows and
   * the source when every row was read and the frame is good, for the checks that follow the reading.
   */
  | {
      ok: false;
      kind: 'invalid';
      errors: BatchRowError[];
      errorCount: number;
      goodItems?: CheckedBatchItems;
      source?: FundingSource | undefined;
    }
  /** 413: the body is longer than BATCH_BODY_LIMIT. */
  | { ok: false; kind: 'too-large'; maxBytes: number }
  /** 503: the upload budget cannot hold this upload now. */
  | { ok: false; kind: 'over-budget' }
  /** 400 MALFORMED_JSON. */
  | { ok: false; kind: 'malformed'; message: string }
  /** The client stopped sending before the end (400 REQUEST_ABORTED, if it is still there to hear it). */
  | { ok: false; kind: 'aborted' };

const frameError = (field: string, message: string): BatchRowError => ({
  row: 0,
  reference: null,
  field,
  code: 'INVALID',
  message,
});
const tooManyItems = () => new BatchReadRefusal(frameError('items', `a batch has at most ${MAX_BATCH_ITEMS} items`));

/** A JSON body that is not JSON. */
class MalformedJson extends Error {}

/**
 * Where and what the JSON parser stopped at, never the value it met: the parser's own words repeat it, and it may be
 * a cash-in code or a token.
 */
function parserWords(error: Error): string {
  const at = /absolute position "(\d+)"/.exec(error.message)?.[1];
  if (at !== undefined) return `an unexpected character at byte ${at}`;
  const token = /^Unexpected (?:partial )?([A-Z_]+) /.exec(error.message)?.[1];
  if (token !== undefined) return `an unexpected ${token.toLowerCase().replaceAll('_', ' ')}`;
  return 'it stops in the middle of a value';
}

/**
 * A streaming reader of the JSON body's frame: every token is checked against the bounds of a
 * batch (batch-json-bounds.ts) before the parser sees it; the top-level members other than
 * `items` are kept as they are (the frame schema checks them at the end), each element of `items`
 * is handed to `onItem` as soon as it is complete and dropped from the parser's stack.
 */
function createJsonFrameReader(onItem: (raw: unknown) => void) {
  const tokenizer = new Tokenizer();
  const parser = new TokenParser({ paths: ['$.*', '$.items.*'], keepStack: false });
  const bounds = createJsonBatchBounds();
  const head: Record<string, unknown> = {};
  let itemsSeen = 0;
  let tokens = 0;
  tokenizer.onToken = (info) => {
    tokens += 1;
    bounds.token(info);
    parser.write(info);
  };
  parser.onValue = ({ value, key, parent, stack }: ParsedElementInfo) => {
    if (stack.length === 1) {
      // A member of the body: `items` is the array its elements were taken out of (or not an array).
      const name = String(key);
      if (Object.hasOwn(head, name)) throw new BatchReadRefusal(frameError(name, `${name} is given twice`));
      head[name] = name === 'items' && Array.isArray(value) ? itemsSeen : value;
      return;
    }
    if (stack.length === 2 && stack[1]!.key === 'items' && Array.isArray(parent)) {
      // The parser keeps what it emits in its parent: taken out here, so the array stays empty.
      parent.pop();
      itemsSeen += 1;
      if (itemsSeen > MAX_BATCH_ITEMS) throw tooManyItems();
      onItem(value);
    }
  };
  const syntax = (run: () => void) => {
    try {
      run();
    } catch (error) {
      if (error instanceof TokenizerError || error instanceof TokenParserError)
        throw new MalformedJson(parserWords(error));
      throw error;
    }
  };
  return {
    write: (bytes: Uint8Array) => {
      syntax(() => tokenizer.write(bytes));
      bounds.wrote(bytes.length);
    },
    /** The bytes held while the body is read: the item or member being read (at most its bound). */
    heldBytes: () => bounds.heldBytes(),
    end: () => {
      if (tokens === 0) return;
      syntax(() => tokenizer.end());
      if (!parser.isEnded) throw new MalformedJson('the body ends before the JSON does');
    },
    /** The frame as the schema checks it: `items` counted, not kept (its elements were checked one by one). */
    frame(): Record<string, unknown> {
      const { items, ...rest } = head;
      return {
        ...rest,
        ...(items === undefined ? {} : { items: typeof items === 'number' ? countedItems(items) : items }),
      };
    },
  };
}

/** What the frame schema's items bounds see of an items array of `count` elements: none, or one. */
const countedItems = (count: number): unknown[] => (count === 0 ? [] : [null]);

/**
 * Reads an upload to its end or to its first refusal, every item checked as it arrives. `share`
 * is the upload's share of the budget: it holds the kept items' share when this returns (the
 * caller closes it once the batch is stored or refused).
 */
export async function readBatchUpload(
  body: AsyncIterable<Uint8Array | string>,
  form: BatchUploadForm,
  share: UploadShare,
  options: { maxBytes?: number; bounds?: { min: bigint; max: bigint } } = {},
): Promise<BatchUploadRead> {
  const maxBytes = options.maxBytes ?? BATCH_BODY_LIMIT;
  const checker = createBatchItemChecker(options.bounds);
  const decoder = new TextDecoder('utf-8');
  const csv = form.kind === 'csv' ? createBatchCsvReader(form.currency, (raw) => checker.add(raw)) : null;
  const json = form.kind === 'json' ? createJsonFrameReader((raw) => checker.add(raw)) : null;
  let bytes = 0;
  /** Items charged to the share so far, and the bytes held of the item, member or line being read. */
  let charged = 0;
  let chargedHeld = 0;
  const chunks = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array | string>;
      try {
        next = await chunks.next();
      } catch {
        // The body stream failed (the client went away mid-body): nothing more to read.
        return { ok: false, kind: 'aborted' };
      }
      if (next.done) break;
      const piece = next.value;
      const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
      bytes += chunk.length;
      if (bytes > maxBytes) return { ok: false, kind: 'too-large', maxBytes };
      if (!share.take(chunk.length)) return { ok: false, kind: 'over-budget' };
      for (let at = 0; at < chunk.length; at += MAX_WRITE_BYTES) {
        const piece = chunk.subarray(at, at + MAX_WRITE_BYTES);
        if (csv) csv.write(decoder.decode(piece, { stream: true }));
        else json!.write(piece);
      }
      share.give(chunk.length);
      // Every item read holds its share (its reference in the duplicate map, and its compact form while the batch is
      // good).
      if (checker.count > charged) {
        if (!share.take((checker.count - charged) * UPLOAD_BYTES_PER_ITEM)) return { ok: false, kind: 'over-budget' };
        charged = checker.count;
      }
      // And what is held of the item, member or line not yet complete.
      const held = csv ? csv.heldBytes : json!.heldBytes();
      if (held > chargedHeld && !share.take(held - chargedHeld)) return { ok: false, kind: 'over-budget' };
      if (held < chargedHeld) share.give(chargedHeld - held);
      chargedHeld = held;
    }
    if (csv) {
      csv.write(decoder.decode());
      csv.end();
    } else json!.end();
  } catch (error) {
    if (error instanceof BatchReadRefusal) return invalid(checker, error.error);
    if (error instanceof MalformedJson)
      return { ok: false, kind: 'malformed', message: `the body is not valid JSON (${error.message})` };
    throw error;
  }
  const frameInput =
    form.kind === 'csv'
      ? { name: form.name, ...(form.source ? { source: form.source } : {}), items: countedItems(checker.count) }
      : json!.frame();
  const frame = createBatchFrameSchema.safeParse(frameInput);
  const result = checker.result();
  if (!frame.success) {
    // The frame's problems (row 0) first, then the rows' own: one answer names every problem of the upload.
    const errors = frame.error.issues.map((issue): BatchRowError =>
      frameError(issue.path.join('.') || 'body', issue.message),
    );
    const rows = result.ok || result.errors.every((error) => error.row === 0) ? null : result;
    return {
      ok: false,
      kind: 'invalid',
      errors: [...errors, ...(rows?.errors ?? [])].slice(0, MAX_LISTED_ROW_ERRORS),
      errorCount: errors.length + (rows?.errorCount ?? 0),
    };
  }
  if (!result.ok)
    return {
      ok: false,
      kind: 'invalid',
      errors: result.errors,
      errorCount: result.errorCount,
      ...(result.goodItems ? { goodItems: result.goodItems, source: frame.data.source } : {}),
    };
  return { ok: true, name: frame.data.name, source: frame.data.source, items: result.items, total: result.total };
}

/**
 * A refusal while reading, after the problems of the rows read before it: those first, in row
 * order, then the one that stopped the reading (on its row, or row 0 for the file itself).
 */
function invalid(checker: ReturnType<typeof createBatchItemChecker>, stop: BatchRowError): BatchUploadRead {
  const before = checker.problems();
  return {
    ok: false,
    kind: 'invalid',
    errors: [...before.errors, stop].slice(0, MAX_LISTED_ROW_ERRORS),
    errorCount: before.errorCount + 1,
  };
}
