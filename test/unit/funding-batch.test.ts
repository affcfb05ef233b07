// domain/funding-batch.ts: a batch's items are checked all at once, every problem of every row
// reported with its row and reference (at most 1000 listed, all counted), and a CSV file reads
// into the same items as the JSON body.
import { describe, expect, it } from 'vitest';
import {
  BatchReadRefusal,
  checkBatchItems,
  createBatchCsvReader,
  createBatchFrameSchema,
  MAX_CSV_LINE,
  MAX_LISTED_ROW_ERRORS,
  mergeRowProblems,
  type BatchRowError,
  readBatchCsv,
} from '../../domain/funding-batch.ts';

const item = (reference: string, value = '10.00', code = '1234567') => ({
  reference,
  recipient: { type: 'CODE', code },
  amount: { currency: 'PHP', value },
});

describe('a batch’s items', () => {
  it('are accepted with their total in thousandths when every row is right', () => {
    const check = checkBatchItems([
      item('a-1'),
      item('a_2', '0.50'),
      {
        reference: 'A3',
        recipient: { type: 'TOKEN', linkId: '0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11' },
        amount: { currency: 'PHP', value: '1' },
      },
    ]);
    expect(check).toMatchObject({ ok: true, total: { currency: 'PHP', thousandths: 11_500n } });
    expect(check.ok && check.items.map((each) => [each.row, each.reference])).toEqual([
      [1, 'a-1'],
      [2, 'a_2'],
      [3, 'A3'],
    ]);
  });

  it('report every bad row, with its row, reference, field and code', () => {
    const check = checkBatchItems(
      [
        item('ok-1'),
        item('bad ref'),
        item('ok-1'),
        item('money', '-1'),
        { ...item('usd'), amount: { currency: 'USD', value: '1.00' } },
        item('code', '1.00', '123'),
        item('small', '0.50'),
        item('large', '60000.00'),
      ],
      { min: 1_000n, max: 50_000_000n },
    );
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.errors.map((error) => [error.row, error.reference, error.field, error.code])).toEqual([
      [2, 'bad ref', 'reference', 'INVALID'],
      [3, 'ok-1', 'reference', 'DUPLICATE_REFERENCE'],
      [4, 'money', 'amount.value', 'INVALID'],
      [5, 'usd', 'amount.currency', 'CURRENCY_NOT_ACCEPTED'],
      [6, 'code', 'recipient.code', 'INVALID'],
      [7, 'small', 'amount.value', 'AMOUNT_TOO_SMALL'],
      [8, 'large', 'amount.value', 'AMOUNT_TOO_LARGE'],
    ]);
    expect(check.errorCount).toBe(7);
  });

  it('name a good row that repeats a bad row’s reference, and a bad row that repeats an earlier one', () => {
    const check = checkBatchItems([item('twice', '1.00', '123'), item('twice'), item('ok'), item('ok', 'x')]);
    expect(!check.ok && check.errors.map((error) => [error.row, error.reference, error.field, error.code])).toEqual([
      [1, 'twice', 'recipient.code', 'INVALID'],
      // Before: not named until row 1 was mended and the file sent again.
      [2, 'twice', 'reference', 'DUPLICATE_REFERENCE'],
      [4, 'ok', 'amount.value', 'INVALID'],
      [4, 'ok', 'reference', 'DUPLICATE_REFERENCE'],
    ]);
    expect(check).toMatchObject({ ok: false, errorCount: 4 });
    // What is no reference (blank, or too long) is not recorded: each such row is named once, for itself.
    const blanks = checkBatchItems([item('', 'x'), item('', 'x'), item('r'.repeat(65)), item('r'.repeat(65))]);
    expect(blanks).toMatchObject({ ok: false });
    expect(!blanks.ok && blanks.errors.map((error) => [error.row, error.field, error.code])).toEqual([
      [1, 'reference', 'INVALID'],
      [1, 'amount.value', 'INVALID'],
      [2, 'reference', 'INVALID'],
      [2, 'amount.value', 'INVALID'],
      [3, 'reference', 'INVALID'],
      [4, 'reference', 'INVALID'],
    ]);
  });

  it('merge two checks’ problems in row order, listing none of the second past what the first left unlisted', () => {
    const problem = (row: number, code: 'INVALID' | 'LINK_NOT_FOUND'): BatchRowError => ({
      row,
      reference: `r${row}`,
      field: 'x',
      code,
      message: code,
    });
    const first = { errors: [problem(1, 'INVALID'), problem(3, 'INVALID')], errorCount: 2 };
    const then = { errors: [problem(2, 'LINK_NOT_FOUND'), problem(9, 'LINK_NOT_FOUND')], errorCount: 2 };
    expect(mergeRowProblems(first, then).errors.map((error) => [error.row, error.code])).toEqual([
      [1, 'INVALID'],
      [2, 'LINK_NOT_FOUND'],
      [3, 'INVALID'],
      [9, 'LINK_NOT_FOUND'],
    ]);
    // The first listed rows 1 to 1000 of its 1500: the second's row 500 is listed, its row 2000 (after rows the first
    // did not list) is not; every problem is counted.
    const many = {
      errors: Array.from({ length: 1000 }, (_, index) => problem(index + 1, 'INVALID')),
      errorCount: 1500,
    };
    const merged = mergeRowProblems(many, {
      errors: [problem(500, 'LINK_NOT_FOUND'), problem(2000, 'LINK_NOT_FOUND')],
      errorCount: 2,
    });
    expect(merged.errorCount).toBe(1502);
    expect(merged.errors).toHaveLength(MAX_LISTED_ROW_ERRORS);
    expect(merged.errors.filter((error) => error.code === 'LINK_NOT_FOUND').map((error) => error.row)).toEqual([500]);
  });

  it('list at most 1000 errors but count them all', () => {
    const rows = Array.from({ length: 1500 }, (_, index) => item(`r${index}`, 'x'));
    const check = checkBatchItems(rows);
    expect(check).toMatchObject({ ok: false, errorCount: 1500 });
    expect(!check.ok && check.errors).toHaveLength(MAX_LISTED_ROW_ERRORS);
  });

  it('come in a frame of 1 to 100,000 items with a name', () => {
    expect(createBatchFrameSchema.safeParse({ name: 'May rewards', items: [item('a')] }).success).toBe(true);
    expect(createBatchFrameSchema.safeParse({ name: 'none', items: [] }).success).toBe(false);
    expect(createBatchFrameSchema.safeParse({ name: ' ', items: [item('a')] }).success).toBe(false);
    expect(
      createBatchFrameSchema.safeParse({ name: 'big', items: Array.from({ length: 100_001 }, () => ({})) }).success,
    ).toBe(false);
  });
});

describe('a batch CSV file', () => {
  it('reads into the JSON body’s items (quotes, CRLF, a byte order mark)', () => {
    const csv =
      '\uFEFFreference,recipient_type,recipient,amount\r\n"r,1",CODE,1234567,10.00\r\nr2,TOKEN,0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11,"2.5"\n';
    const read = readBatchCsv(csv, 'PHP');
    expect(read).toEqual({
      ok: true,
      items: [
        { reference: 'r,1', recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '10.00' } },
        {
          reference: 'r2',
          recipient: { type: 'TOKEN', linkId: '0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11' },
          amount: { currency: 'PHP', value: '2.5' },
        },
      ],
    });
    // "r,1" is not a valid reference: the row check says so, on row 1.
    const check = checkBatchItems(read.ok ? read.items : []);
    expect(!check.ok && check.errors.map((error) => [error.row, error.field])).toEqual([[1, 'reference']]);
  });

  it('names a row with the wrong number of columns, and refuses a wrong header or an open quote', () => {
    const read = readBatchCsv(
      'reference,recipient_type,recipient,amount\nr1,CODE,1234567\nr2,CODE,1234567,1.00\n',
      'PHP',
    );
    const check = checkBatchItems(read.ok ? read.items : []);
    expect(!check.ok && check.errors).toEqual([
      {
        row: 1,
        reference: 'r1',
        field: 'row',
        code: 'INVALID',
        message: 'a row has 4 columns (reference,recipient_type,recipient,amount), not 3',
      },
    ]);
    expect(readBatchCsv('ref,type,to,amount\n', 'PHP')).toMatchObject({
      ok: false,
      error: { row: 0, field: 'header' },
    });
    expect(readBatchCsv('reference,recipient_type,recipient,amount\n"r1,CODE,1234567,1.00\n', 'PHP')).toMatchObject({
      ok: false,
      error: { row: 0, field: 'file' },
    });
  });

  it('stops reading at the 100,001st row: a body of millions of short lines is refused without reading them all', () => {
    // 100,002 rows, then an open quote: read to the end, the quote would be the problem named;
    // read only as far as the limit, the number of rows is.
    const csv = `reference,recipient_type,recipient,amount\n${'a\n'.repeat(100_002)}"open\n`;
    expect(readBatchCsv(csv, 'PHP')).toEqual({
      ok: false,
      error: { row: 0, reference: null, field: 'file', code: 'INVALID', message: 'a batch has at most 100000 items' },
    });
    // 100,000 rows are read (each then checked as an item).
    const full = readBatchCsv(
      `reference,recipient_type,recipient,amount\n${'r,CODE,1234567,1.00\n'.repeat(100_000)}`,
      'PHP',
    );
    expect(full.ok && full.items.length).toBe(100_000);
  });
});

describe('a batch CSV file read as it arrives', () => {
  const csv =
    '\uFEFFreference,recipient_type,recipient,amount\r\n"r,1",CODE,1234567,10.00\r\nr2,TOKEN,0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11,"2.5"\n"q""uote",CODE,7654321,1\r\n\r\nr4,CODE,1234567\n';

  it('reads the same items whatever the chunks it comes in (a quote, a CRLF or the byte order mark split between two)', () => {
    const whole = readBatchCsv(csv, 'PHP');
    expect(whole.ok && whole.items).toHaveLength(4);
    for (let split = 0; split <= csv.length; split += 1) {
      const items: unknown[] = [];
      const reader = createBatchCsvReader('PHP', (item) => items.push(item));
      reader.write(csv.slice(0, split));
      reader.write(csv.slice(split));
      reader.end();
      expect(items, `split at ${split}`).toEqual(whole.ok ? whole.items : []);
    }
  });

  it('refuses a row with more fields than the header at its extra field, naming the row: nothing after it is read', () => {
    // A line of commas: refused at the comma that ends its fifth field, in the write that brought it.
    const rows: unknown[] = [];
    const reader = createBatchCsvReader('PHP', (item) => rows.push(item));
    reader.write('reference,recipient_type,recipient,amount\nr1,CODE,1234567,1.00\nr2,CODE,1234567,1.00,');
    expect(() => reader.write(',,,,')).toThrow(BatchReadRefusal);
    expect(rows).toHaveLength(1);
    expect(() =>
      createBatchCsvReader('PHP', () => undefined).write(
        `reference,recipient_type,recipient,amount\nr1,CODE,1234567,1.00\nr2,CODE,1234567,1.00,${','.repeat(1000)}`,
      ),
    ).toThrow(BatchReadRefusal);
    const read = readBatchCsv(
      `reference,recipient_type,recipient,amount\nr1,CODE,1234567,1.00\nr2,CODE,1234567,1.00,extra\n${'r,CODE,1234567,1.00\n'.repeat(10)}`,
      'PHP',
    );
    expect(read).toEqual({
      ok: false,
      error: {
        row: 2,
        reference: 'r2',
        field: 'row',
        code: 'INVALID',
        message:
          "row 2 has more fields than the header's 4 (reference,recipient_type,recipient,amount): the file was not read further",
      },
    });
  });

  it('refuses a line longer than MAX_CSV_LINE characters as it is read, however it goes on', () => {
    const reader = createBatchCsvReader('PHP', () => undefined);
    reader.write('reference,recipient_type,recipient,amount\n');
    expect(() => reader.write('a'.repeat(MAX_CSV_LINE + 1))).toThrow(BatchReadRefusal);
    expect(
      readBatchCsv(`reference,recipient_type,recipient,amount\n"${'a'.repeat(2000)}",CODE,1234567,1.00\n`, 'PHP'),
    ).toMatchObject({ ok: false, error: { row: 1, field: 'row', code: 'INVALID' } });
    // The header too: a first line of 32 MB is not a header.
    expect(readBatchCsv(`${'reference,'.repeat(200)}\n`, 'PHP')).toMatchObject({
      ok: false,
      error: { row: 0, field: 'header' },
    });
  });
});
