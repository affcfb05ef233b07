// The shape a batch's JSON body must keep while it is read, checked token by token before the
// parser builds anything from it (docs/security.md, upload limits): the body is an object whose
// members are the frame schema's (name, source, items) and nothing else; `items` is an array; the
// other members, each item, and every single token (a string, a number, a key, a run of spaces)
// have a byte bound far above any real batch's and far below what could hurt the API. Whatever
// else a body holds (a member outside items at any depth, an object of items, one huge item, a
// huge string or key or number, thousands of members in one item, deep nesting) passes one of
// these bounds within a few kilobytes, and is refused there (422 BATCH_INVALID): nothing built of
// it is bigger than the bound, and nothing past it is read. The bytes of the item or member being
// read are what the upload holds beyond its kept items: heldBytes() tells the upload budget.
import { TokenType, type ParsedTokenInfo } from '@streamparser/json';
import { BatchReadRefusal, createBatchFrameSchema, type BatchRowError } from '../domain/funding-batch.ts';

/**
 * The most bytes from the start of one token to the start of the next: a string, number or key
 * with the spaces after it. A batch's longest string is its name, 200 characters: at most 2,400
 * bytes even with every character escaped (`\ud83d\ude00`).
 */
export const MAX_JSON_TOKEN_BYTES = 4096;

/** The most bytes of one item, its first token to the comma after it (a real one: under 300, pretty-printed). */
export const MAX_JSON_ITEM_BYTES = 4096;

/** The most bytes of a member of the body other than `items` (its key to the comma after its value): name, source. */
export const MAX_JSON_MEMBER_BYTES = 8192;

/** How deep a batch's JSON nests: the body, items, an item, its recipient or amount, one more for room. */
export const MAX_JSON_DEPTH = 5;

/** The members a body may have: the frame schema's. */
const frameMembers: ReadonlySet<string> = new Set(Object.keys(createBatchFrameSchema.shape));

/** What a refusal shows of a key or value it quotes: the start of it. */
const shown = (text: string): string => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

const refuse = (error: Omit<BatchRowError, 'code'>): never => {
  throw new BatchReadRefusal({ ...error, code: 'INVALID' });
};

/** A stretch of the body held while it is read: one item of `items`, or another member of the body. */
interface Region {
  kind: 'item' | 'member';
  start: number;
  /** The item's row, or the member's name. */
  row: number;
  name: string;
}

export type JsonBatchBounds = ReturnType<typeof createJsonBatchBounds>;

/**
 * Checks each token of a body as the tokenizer emits it (`token`, before the parser sees it) and
 * what is left pending after each write (`wrote`); either throws BatchReadRefusal.
 */
export function createJsonBatchBounds() {
  let depth = 0;
  let tokens = 0;
  /** Bytes written to the tokenizer so far. */
  let position = 0;
  let lastTokenStart = 0;
  /** At depth 1: the next string is a member's name. */
  let expectKey = false;
  /** The member whose value comes next (at depth 1, after its key). */
  let member: string | null = null;
  /** Inside the array `items` (its elements at depth 2). */
  let inItems = false;
  let items = 0;
  let region: Region | null = null;

  const tooLong = (open: Region): never =>
    open.kind === 'item'
      ? refuse({
          row: open.row,
          reference: null,
          field: 'item',
          message: `row ${open.row} is longer than an item can be (${MAX_JSON_ITEM_BYTES} bytes of JSON): the body was not read further`,
        })
      : refuse({
          row: 0,
          reference: null,
          field: open.name,
          message: `${open.name} is longer than a batch's ${open.name} can be (${MAX_JSON_MEMBER_BYTES} bytes of JSON): the body was not read further`,
        });

  const tokenTooLong = (): never => {
    // In an item, or between two (a pending string or number is the start of the next one).
    const row = region?.kind === 'item' ? region.row : inItems && depth === 2 ? items + 1 : 0;
    return refuse({
      row,
      reference: null,
      field: row > 0 ? 'item' : (region?.name ?? 'body'),
      message: `a string, number, key or run of spaces longer than ${MAX_JSON_TOKEN_BYTES} bytes: no batch has one; the body was not read further`,
    });
  };

  /** Refuses a region or a token that has passed its bound by `at`. */
  function checkAt(at: number): void {
    if (at - lastTokenStart > MAX_JSON_TOKEN_BYTES) tokenTooLong();
    if (region && at - region.start > (region.kind === 'item' ? MAX_JSON_ITEM_BYTES : MAX_JSON_MEMBER_BYTES))
      tooLong(region);
  }

  return {
    /** One token, before the parser builds anything of it. */
    token(info: ParsedTokenInfo): void {
      const { token, offset } = info;
      tokens += 1;
      checkAt(offset);
      lastTokenStart = offset;
      if (tokens === 1 && token !== TokenType.LEFT_BRACE)
        refuse({
          row: 0,
          reference: null,
          field: 'body',
          message: 'the body must be a JSON object: { "name", "source"?, "items" }',
        });
      const opens = token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET;
      const closes = token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET;

      if (depth === 1) {
        if (expectKey && token === TokenType.STRING) {
          const name = String(info.value);
          if (!frameMembers.has(name))
            refuse({
              row: 0,
              reference: null,
              field: 'body',
              message: `the body has no member ${shown(name)}: a batch is { "name", "source"?, "items" }`,
            });
          member = name;
          expectKey = false;
          if (name !== 'items') region = { kind: 'member', start: offset, row: 0, name };
        } else if (token === TokenType.COMMA) {
          region = null;
          expectKey = true;
        } else if (member === 'items' && token !== TokenType.COLON) {
          // The value of `items`: an array, or nothing (whatever else it holds is not read).
          if (token !== TokenType.LEFT_BRACKET)
            refuse({ row: 0, reference: null, field: 'items', message: 'items must be an array' });
          inItems = true;
          member = null;
        }
      } else if (depth === 2 && inItems) {
        if (token === TokenType.COMMA) region = null;
        else if (token === TokenType.RIGHT_BRACKET) {
          region = null;
          inItems = false;
        } else if (region === null) {
          items += 1;
          region = { kind: 'item', start: offset, row: items, name: 'item' };
        }
      }

      if (opens) {
        depth += 1;
        if (depth > MAX_JSON_DEPTH)
          refuse({
            row: 0,
            reference: null,
            field: 'body',
            message: `the body nests deeper than a batch does (${MAX_JSON_DEPTH} levels)`,
          });
        if (depth === 1) expectKey = true;
      } else if (closes) {
        depth -= 1;
        if (depth === 0) region = null;
      }
    },
    /** `bytes` more were written to the tokenizer: what it holds pending must still be within bounds. */
    wrote(bytes: number): void {
      position += bytes;
      checkAt(position);
    },
    /**
     * The bytes of the body held while it is read: the item or member being read, or else what follows the last token.
     */
    heldBytes(): number {
      return region ? position - region.start : Math.max(0, position - lastTokenStart - 1);
    },
  };
}
