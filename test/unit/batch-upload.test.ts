// fundings/batch-upload.ts: a batch upload read as it arrives, each item checked as it comes and
// kept in its compact form; what cannot be a batch is refused as soon as it is seen, and the body
// is not read past it; every upload holds a share of the process's upload budget. And the
// fingerprint written part by part is the one batches stored before were given.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BATCH_BODY_LIMIT, readBatchUpload, UPLOAD_BYTES_PER_ITEM } from '../../fundings/batch-upload.ts';
import { requestFingerprint } from '../../lib/idempotency.ts';
import { createUploadBudget } from '../../lib/upload-budget.ts';

const item = (reference: string, value = '1.00') => ({
  reference,
  recipient: { type: 'CODE', code: '1234567' },
  amount: { currency: 'PHP', value },
});

/** The pieces as a body, counting how many were read. */
function body(pieces: Iterable<string>) {
  const read = { pieces: 0 };
  async function* stream() {
    for (const piece of pieces) {
      read.pieces += 1;
      yield Buffer.from(piece);
    }
  }
  return { stream: stream(), read };
}

const roomy = () => createUploadBudget(1 << 30).open();

function* jsonItems(count: number, perPiece: number): Generator<string> {
  yield '{"name":"many","items":[';
  for (let start = 0; start < count; start += perPiece) {
    const chunk = Array.from({ length: Math.min(perPiece, count - start) }, (_, index) =>
      JSON.stringify(item(`i-${start + index}`)),
    );
    yield `${start === 0 ? '' : ','}${chunk.join(',')}`;
  }
  yield ']}';
}

describe('a JSON batch body read as it arrives', () => {
  it('checks each item as it comes: the same items and problems as the whole body, in pieces of any size', async () => {
    const text = JSON.stringify({ name: 'May rewards', items: [item('a-1'), item('a_2', '0.50'), item('a-3', '2')] });
    for (const size of [1, 3, 7, 64, text.length]) {
      const pieces = Array.from({ length: Math.ceil(text.length / size) }, (_, index) =>
        text.slice(index * size, (index + 1) * size),
      );
      const read = await readBatchUpload(body(pieces).stream, { kind: 'json' }, roomy());
      expect(read.ok, `pieces of ${size}`).toBe(true);
      if (!read.ok) return;
      expect({
        name: read.name,
        total: read.total,
        references: [...read.items].map((each) => [each.row, each.reference, each.amount.value]),
      }).toEqual({
        name: 'May rewards',
        total: { currency: 'PHP', thousandths: 3_500n },
        references: [
          [1, 'a-1', '1.00'],
          [2, 'a_2', '0.50'],
          [3, 'a-3', '2.00'],
        ],
      });
    }
    const bad = await readBatchUpload(
      body([
        JSON.stringify({
          name: 'x',
          items: [item('ok'), item('ok'), item('bad ref'), { ...item('c'), recipient: { type: 'CODE', code: '12' } }],
        }),
      ]).stream,
      { kind: 'json' },
      roomy(),
    );
    expect(bad).toMatchObject({ ok: false, kind: 'invalid', errorCount: 3 });
    expect(
      !bad.ok && bad.kind === 'invalid' && bad.errors.map((error) => [error.row, error.field, error.code]),
    ).toEqual([
      [2, 'reference', 'DUPLICATE_REFERENCE'],
      [3, 'reference', 'INVALID'],
      [4, 'recipient.code', 'INVALID'],
    ]);
  });

  it('checks the frame as the schema does: a missing name, an unknown key, items that are not a list, none at all (row 0)', async () => {
    const frame = async (value: unknown) => {
      const read = await readBatchUpload(body([JSON.stringify(value)]).stream, { kind: 'json' }, roomy());
      return !read.ok && read.kind === 'invalid' ? read.errors.map((error) => [error.row, error.field]) : read;
    };
    expect(await frame({ items: [item('a')] })).toEqual([[0, 'name']]);
    // The rows' own problems beside the frame's (before: only the frame's; the rows' were named once it was mended).
    expect(await frame({ items: [item('a'), item('b', '1.001'), item('c', '-1')] })).toEqual([
      [0, 'name'],
      [2, 'amount.value'],
      [3, 'amount.value'],
    ]);
    expect(await frame({ name: 'x', items: [item('a')], extra: 1 })).toEqual([[0, 'body']]);
    expect(await frame({ name: 'x', items: { a: item('a') } })).toEqual([[0, 'items']]);
    expect(await frame({ name: 'x', items: [] })).toEqual([[0, 'items']]);
    expect(await frame([item('a')])).toEqual([[0, 'body']]);
    expect(await readBatchUpload(body(['{"name":"x","items":[']).stream, { kind: 'json' }, roomy())).toMatchObject({
      ok: false,
      kind: 'malformed',
    });
    expect(
      await readBatchUpload(body(['{"name":"x","name":"y","items":[]}']).stream, { kind: 'json' }, roomy()),
    ).toMatchObject({ ok: false, kind: 'invalid', errors: [{ row: 0, field: 'name' }] });
  });

  it('refuses the 100,001st item as it arrives: the rest of the body is not read', async () => {
    const { stream, read } = body(jsonItems(300_000, 1000));
    const answer = await readBatchUpload(stream, { kind: 'json' }, roomy());
    expect(answer).toMatchObject({
      ok: false,
      kind: 'invalid',
      errors: [{ row: 0, field: 'items', message: 'a batch has at most 100000 items' }],
    });
    // The opening piece and the 100 pieces of 1,000 items, then the one holding the 100,001st.
    expect(read.pieces).toBe(102);
  });

  it('refuses JSON nested deeper than a batch as it is read', async () => {
    const { stream, read } = body([
      '{"name":"x","items":[',
      '[[[[[[',
      ...Array.from({ length: 1000 }, () => '[[[[[[[['),
    ]);
    expect(await readBatchUpload(stream, { kind: 'json' }, roomy())).toMatchObject({
      ok: false,
      kind: 'invalid',
      errors: [{ row: 0, field: 'body' }],
    });
    expect(read.pieces).toBe(2);
  });
});

/**
 * A body of about 32 MB: `head`, then `unit` repeated in pieces of 64 KiB, then `tail`; each piece made only when read.
 */
function* hostile(head: string, unit: string, tail = ''): Generator<string> {
  yield head;
  const piece = unit.repeat(Math.ceil(65_536 / unit.length));
  for (let sent = 0; sent < 32_000_000; sent += piece.length) yield piece;
  yield tail;
}

describe('a JSON batch body of a shape no batch has', () => {
  const good = JSON.stringify(item('g-1'));
  // Each is about 32 MB, under the body limit; each is refused (422 BATCH_INVALID) within its first pieces.
  const shapes: Array<[string, Generator<string>, { row: number; field: string }]> = [
    [
      'a member outside items, after them',
      hostile(`{"name":"x","items":[${good}],"pad":[`, '{},', '{}]}'),
      { row: 0, field: 'body' },
    ],
    [
      'a member outside items, before them',
      hostile('{"pad":[', '{},', `{}],"name":"x","items":[${good}]}`),
      { row: 0, field: 'body' },
    ],
    [
      'a member outside items inside source',
      hostile('{"name":"x","source":{"type":"TREASURY","pad":[', '{},', `{}]},"items":[${good}]}`),
      { row: 0, field: 'source' },
    ],
    [
      'items sent as an object',
      hostile('{"name":"x","items":{', `"k":${good},`, `"z":${good}}}`),
      { row: 0, field: 'items' },
    ],
    [
      'one huge item',
      hostile(`{"name":"x","items":[${good},{"reference":"huge","pad":[`, '{},', '{}]}]}'),
      { row: 2, field: 'item' },
    ],
    [
      'thousands of members in one item',
      hostile(`{"name":"x","items":[${good},{"reference":"many",`, '"k":0,', '"z":0}]}'),
      { row: 2, field: 'item' },
    ],
    ['a huge string for the name', hostile('{"name":"', 'x', `","items":[${good}]}`), { row: 0, field: 'name' }],
    [
      'a huge string in an item',
      hostile(`{"name":"x","items":[{"reference":"`, 'r', '"}]}'),
      { row: 1, field: 'item' },
    ],
    ['a huge key', hostile('{"', 'k', `":1,"name":"x","items":[${good}]}`), { row: 0, field: 'body' }],
    [
      'a number with millions of digits',
      hostile(`{"name":"x","items":[{"reference":"n","amount":{"currency":"PHP","value":1`, '9', '}}]}'),
      { row: 1, field: 'item' },
    ],
    ['a run of spaces', hostile('{"name":"x",', ' ', `"items":[${good}]}`), { row: 0, field: 'body' }],
    [
      'a string as an element of items',
      hostile(`{"name":"x","items":[${good},"`, 's', '"]}'),
      { row: 2, field: 'item' },
    ],
  ];

  it.each(shapes)('%s: refused as soon as the stream shows it, the rest not read', async (_, pieces, where) => {
    const { stream, read } = body(pieces);
    const answer = await readBatchUpload(stream, { kind: 'json' }, roomy());
    expect(answer).toMatchObject({
      ok: false,
      kind: 'invalid',
      errors: [expect.objectContaining({ ...where, code: 'INVALID' })],
    });
    // The head and at most two pieces of 64 KiB: about 130 KB read of 32 MB.
    expect(read.pieces).toBeLessThanOrEqual(3);
  });

  it('charges the bytes of an item still being read to the upload budget, and gives them back once it is read', async () => {
    const budget = createUploadBudget(1 << 20);
    const share = budget.open();
    const heldBetweenPieces: number[] = [];
    async function* pieces() {
      yield Buffer.from(
        `{"name":"x","items":[{"reference":"a-1","recipient":{"type":"CODE","code":"1234567"},"amount":{"currency":"PHP","value":"1.00"}},{"reference":"a-2","recipient":{"type":"CODE","code":"12`,
      );
      heldBetweenPieces.push(budget.used());
      yield Buffer.from('34567"},"amount":{"currency":"PHP","value":"1.00"}}]}');
      heldBetweenPieces.push(budget.used());
    }
    expect(await readBatchUpload(pieces(), { kind: 'json' }, share)).toMatchObject({ ok: true });
    // While the second item was half read: its bytes beside the first item's share; after: the two items' shares.
    expect(heldBetweenPieces[0]).toBeGreaterThan(UPLOAD_BYTES_PER_ITEM + 50);
    expect(heldBetweenPieces[1]).toBe(2 * UPLOAD_BYTES_PER_ITEM);
    share.close();
  });

  it('repeats little of what a bad row sent: 1,000 rows of long unknown keys and references give a small answer', async () => {
    const row = (index: number) =>
      `{"reference":"${'r'.repeat(900)}-${index}",${Array.from({ length: 8 }, (_, key) => `"${'k'.repeat(300)}${key}":0`).join(',')}}`;
    const read = await readBatchUpload(
      body([`{"name":"x","items":[${Array.from({ length: 1000 }, (_, index) => row(index)).join(',')}]}`]).stream,
      { kind: 'json' },
      roomy(),
    );
    expect(read).toMatchObject({ ok: false, kind: 'invalid' });
    if (read.ok || read.kind !== 'invalid') return;
    expect(read.errors.length).toBeGreaterThanOrEqual(1000);
    // Each listed error repeats at most a few hundred characters of its row (3,300 bytes each).
    expect(Buffer.byteLength(JSON.stringify(read.errors)) / read.errors.length).toBeLessThan(600);
  });
});

describe('any batch upload', () => {
  it('stops at the body limit: too large, the rest not read', async () => {
    // 100,000 good items of about 100 bytes, pretty-printed: past a limit of 4 MiB long before the item limit.
    const pretty = (function* () {
      for (const piece of jsonItems(100_000, 1000)) yield piece.replaceAll(',', ',\n    ');
    })();
    const { stream, read } = body(pretty);
    expect(await readBatchUpload(stream, { kind: 'json' }, roomy(), { maxBytes: 4 * 1024 * 1024 })).toMatchObject({
      ok: false,
      kind: 'too-large',
    });
    expect(read.pieces).toBeLessThanOrEqual(40);
    expect(BATCH_BODY_LIMIT).toBe(32 * 1024 * 1024);
  });

  it('holds a share of the upload budget for the items it keeps: past the budget it is refused, and a closed share is given back', async () => {
    const budget = createUploadBudget(3000 * UPLOAD_BYTES_PER_ITEM);
    const first = budget.open();
    expect(await readBatchUpload(body(jsonItems(2000, 100)).stream, { kind: 'json' }, first)).toMatchObject({
      ok: true,
    });
    expect(budget.used()).toBe(2000 * UPLOAD_BYTES_PER_ITEM);
    const second = budget.open();
    const { stream, read } = body(jsonItems(2000, 100));
    expect(await readBatchUpload(stream, { kind: 'json' }, second)).toEqual({ ok: false, kind: 'over-budget' });
    expect(read.pieces).toBeLessThan(15);
    second.close();
    first.close();
    expect(budget.used()).toBe(0);
    const third = budget.open();
    expect(await readBatchUpload(body(jsonItems(2000, 100)).stream, { kind: 'json' }, third)).toMatchObject({
      ok: true,
    });
    third.close();
  });

  it('charges every item read, a bad batch’s too: its references are held to find duplicates', async () => {
    const budget = createUploadBudget(3000 * UPLOAD_BYTES_PER_ITEM);
    const share = budget.open();
    // A bad first row, then 6,000 good ones: nothing is kept, yet every reference goes into the duplicate map.
    const rows = function* () {
      yield 'reference,recipient_type,recipient,amount\nbad ref,CODE,1234567,1.00\n';
      for (let start = 0; start < 6000; start += 500)
        yield Array.from({ length: 500 }, (_, index) => `${'r'.repeat(60)}-${start + index},CODE,1234567,1.00\n`).join(
          '',
        );
    };
    const { stream, read } = body(rows());
    expect(await readBatchUpload(stream, { kind: 'csv', name: 'x', currency: 'PHP' }, share)).toEqual({
      ok: false,
      kind: 'over-budget',
    });
    expect(read.pieces).toBeLessThan(10);
    share.close();
  });

  it('reads a CSV file as the JSON body: the same items, the frame from the query', async () => {
    const csv =
      'reference,recipient_type,recipient,amount\nr1,CODE,1234567,1.00\nr2,TOKEN,0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11,2\n';
    const read = await readBatchUpload(
      body([csv.slice(0, 50), csv.slice(50)]).stream,
      { kind: 'csv', name: 'payroll', source: { type: 'USER_BALANCE', partnerUserId: 'u1' }, currency: 'PHP' },
      roomy(),
    );
    expect(
      read.ok && {
        name: read.name,
        source: read.source,
        items: [...read.items].map((each) => [each.reference, each.recipient, each.amount]),
      },
    ).toEqual({
      name: 'payroll',
      source: { type: 'USER_BALANCE', partnerUserId: 'u1' },
      items: [
        ['r1', { type: 'CODE', code: '1234567' }, { currency: 'PHP', value: '1.00' }],
        ['r2', { type: 'TOKEN', linkId: '0d6f7c3e-1b7a-4c55-9a57-6d8f3f1f3b11' }, { currency: 'PHP', value: '2.00' }],
      ],
    });
    // The problems of the rows before the one that stopped the reading come first.
    const stopped = await readBatchUpload(
      body(['reference,recipient_type,recipient,amount\nbad ref,CODE,1234567,1.00\nr2,CODE,1234567,1.00,x\n']).stream,
      { kind: 'csv', name: 'x', currency: 'PHP' },
      roomy(),
    );
    expect(
      !stopped.ok && stopped.kind === 'invalid' && stopped.errors.map((error) => [error.row, error.field]),
    ).toEqual([
      [1, 'reference'],
      [2, 'row'],
    ]);
  });
});

describe('a request fingerprint written part by part', () => {
  it('is the HMAC of the parts’ JSON array, as batches stored before were given', () => {
    const key = Buffer.from('k'.repeat(32));
    const parts = ['BATCH', 'May "rewards"', 'TREASURY', 'r1|CODE:1234567|PHP|1.00', 'ünï|TOKEN:x|PHP|2.00'];
    expect(requestFingerprint(key, parts)).toBe(createHmac('sha256', key).update(JSON.stringify(parts)).digest('hex'));
    expect(
      requestFingerprint(
        key,
        (function* () {
          yield* parts;
        })(),
      ),
    ).toBe(requestFingerprint(key, parts));
    expect(requestFingerprint(key, [])).toBe(createHmac('sha256', key).update('[]').digest('hex'));
  });
});
