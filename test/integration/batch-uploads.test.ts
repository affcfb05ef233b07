// Hostile batch uploads (contract-decisions section 14; docs/security.md, upload limits): what
// cannot be a batch is refused while it is read, with its status and code, before the client has
// sent it all, and nothing is stored; concurrent uploads share a memory budget, past which an
// upload is refused 503 OVERLOADED with Retry-After. Bodies are sent by node:http in chunks, so the
// test sees how much of a body had gone out when the answer came.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiProcess, type ApiProcess } from '../support/api-process.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
/**
 * The stack's upload budget: 4 MiB, about 16,000 kept items (256 bytes each) across the uploads at
 * once. What a budget proves (shared, refused past it, given back) does not depend on its size: the
 * API's own (64 MiB, BATCH_UPLOAD_BUDGET_BYTES) is the API process's below, which the uploads of
 * more than 100,000 items and the 32 MB bodies go to.
 */
const BUDGET = 4 * 1024 * 1024;
/**
 * The API as production runs it (worker/main's twin: api/main.ts in a process of its own, under its heap cap, the
 * default budget).
 */
let api: ApiProcess;
/** A key with read and fund only: what any batch-uploading client holds. */
const funder = randomUUID();

beforeAll(async () => {
  stack = await startPartnerStack({ batches: { approvalThreshold: 1n, maxInFlight: 4, uploadBudgetBytes: BUDGET } });
  api = await startApiProcess({
    ...stack.workerEnv(),
    OPS_API_KEYS: `uploader:read+fund:${funder}`,
    LOG_LEVEL: 'warn',
  });
}, 120_000);
afterAll(async () => {
  await api?.stop();
  await stack?.close();
});

const HEADER = 'reference,recipient_type,recipient,amount\n';
const csvRow = (index: number, prefix = 'r') =>
  `${prefix}-${index},CODE,${String(1_000_000 + (index % 9_000_000))},1.00\n`;

interface Sent {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | undefined;
  /** Bytes written when the answer's head arrived, and the body's whole length. */
  sentWhenAnswered: number;
  total: number;
}

/**
 * POSTs a body made of `pieces` (each produced only when it is about to be sent), chunk by chunk,
 * stopping as soon as an answer arrives: what the server read past a refusal is what it made the
 * client send. `holdAfter`: bytes after which the sender waits for `release` (a slow client).
 * `to`: another API than the stack's (its address and key).
 */
function send(
  path: string,
  contentType: string,
  pieces: Iterable<string>,
  options: { total: number; holdAfter?: number; release?: Promise<void>; to?: { base: string; key: string } },
): Promise<Sent> {
  const to = options.to ?? { base: stack.apiBase, key: stack.opsKey };
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const request = http.request(`${to.base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${to.key}`,
        'content-type': contentType,
        'idempotency-key': randomUUID(),
        'transfer-encoding': 'chunked',
      },
    });
    request.on('response', (response) => {
      answered = true;
      const sentWhenAnswered = sent;
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('error', (error) =>
        reject(new Error(`the answer (${response.statusCode}) broke off: ${error.message}`)),
      );
      response.on('end', () => {
        request.destroy();
        resolve({
          status: response.statusCode ?? 0,
          body: JSON.parse(text) as Record<string, unknown>,
          retryAfter: response.headers['retry-after'],
          sentWhenAnswered,
          total: options.total,
        });
      });
    });
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    void (async () => {
      let held = false;
      for (const piece of pieces) {
        if (answered) return;
        if (!held && options.holdAfter !== undefined && sent >= options.holdAfter) {
          held = true;
          await options.release;
        }
        sent += Buffer.byteLength(piece);
        if (!request.write(piece))
          await new Promise<void>((drained) => request.once('drain', drained).once('close', drained));
        await new Promise((next) => setImmediate(next));
      }
      if (!answered) request.end();
    })().catch(() => undefined);
  });
}

/** `count` pieces of `size` bytes of `text` repeated. */
function* repeated(text: string, size: number, count: number): Generator<string> {
  const piece = text.repeat(Math.ceil(size / text.length)).slice(0, size);
  for (let index = 0; index < count; index += 1) yield piece;
}

function* csvBody(rows: number, perPiece: number, first = ''): Generator<string> {
  yield HEADER + first;
  for (let start = 0; start < rows; start += perPiece) {
    let piece = '';
    for (let index = start; index < Math.min(rows, start + perPiece); index += 1) piece += csvRow(index);
    yield piece;
  }
}

const stored = async () => ({
  batches: await stack.database.fundingBatch.count(),
  fundings: await stack.database.funding.count(),
});

describe('a batch upload that cannot be a batch is refused while it is read', () => {
  it('a CSV row with more fields than the header: 422 BATCH_INVALID naming the row, the rest of the file not read, nothing stored', async () => {
    const before = await stored();
    // Row 2 has five fields; 200,000 rows (6 MB) follow it.
    const answer = await send(
      '/ops/funding-batches?name=extra-fields',
      'text/csv',
      csvBody(200_000, 2000, `${csvRow(0)}x-1,CODE,1234567,1.00,surprise\n`),
      { total: 6_000_000 },
    );
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({
      code: 'BATCH_INVALID',
      errorCount: 1,
      errors: [
        {
          row: 2,
          reference: 'x-1',
          field: 'row',
          code: 'INVALID',
          message: expect.stringContaining('row 2 has more fields than the header'),
        },
      ],
    });
    expect(answer.sentWhenAnswered, 'bytes sent when the answer came').toBeLessThan(answer.total / 2);
    expect(await stored()).toEqual(before);
  }, 120_000);

  it('a 32 MB line of commas: refused at its fifth field (422 BATCH_INVALID), the rest not read, nothing stored', async () => {
    const before = await stored();
    const pieces = (function* () {
      yield `${HEADER}r-1,CODE,1234567,1.00\n`;
      yield* repeated(',', 64_000, 500); // 32,000,000 commas, one line: under the 32 MiB body limit
    })();
    const answer = await send('/ops/funding-batches?name=commas', 'text/csv', pieces, { total: 32_000_000 });
    expect([413, 422]).toContain(answer.status);
    expect(answer.body).toMatchObject({ code: 'BATCH_INVALID', errors: [{ row: 2, field: 'row', code: 'INVALID' }] });
    expect(answer.sentWhenAnswered, 'bytes sent when the answer came').toBeLessThan(4 * 1024 * 1024);
    expect(await stored()).toEqual(before);
  }, 120_000);

  it('a JSON body with more than 100,000 items: 422 BATCH_INVALID at the 100,001st, before the body is all sent, nothing stored', async () => {
    const before = await stored();
    // 280,000 items of 112 bytes, 31.4 MB: under the 32 MiB body limit, so only the item count can
    // refuse it. The 100,001st ends at 36% of the body; sockets' buffers may carry a few MB past it.
    const items = 280_000;
    const pieces = (function* () {
      yield '{"name":"too many","items":[';
      for (let start = 0; start < items; start += 2000) {
        const chunk: string[] = [];
        for (let index = start; index < start + 2000; index += 1)
          chunk.push(
            JSON.stringify({
              reference: `j-${index}`,
              recipient: { type: 'CODE', code: '1234567' },
              amount: { currency: 'PHP', value: '1.00' },
            }),
          );
        yield `${start === 0 ? '' : ','}${chunk.join(',')}`;
      }
      yield ']}';
    })();
    const total = items * 112;
    // To the API process: its budget is the default, room for the 100,000 items read before the 100,001st.
    const answer = await send('/ops/funding-batches', 'application/json', pieces, {
      total,
      to: { base: api.base, key: funder },
    });
    expect([413, 422]).toContain(answer.status);
    expect(answer.body).toMatchObject({
      code: 'BATCH_INVALID',
      errors: [{ row: 0, field: 'items', message: 'a batch has at most 100000 items' }],
    });
    expect(answer.sentWhenAnswered, 'bytes sent when the answer came').toBeLessThan(total * 0.6);
    expect(await stored()).toEqual(before);
  }, 120_000);
});

describe('concurrent batch uploads', () => {
  it('share a memory budget: past it an upload is refused 503 OVERLOADED with Retry-After, nothing stored; the upload holding it completes', async () => {
    const before = await stored();
    // The first upload, 10,000 rows (22 to 25 bytes each), stops sending after 8,000 of them (about
    // 2 MiB of the 4 MiB budget held) until released; the second's 10,000 rows would need 2.5 MiB more.
    let release!: () => void;
    const released = new Promise<void>((done) => (release = done));
    const rows = 10_000;
    const first = send('/ops/funding-batches?name=first', 'text/csv', csvBody(rows, 2000), {
      total: rows * 24,
      holdAfter: 7_000 * 24,
      release: released,
    });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const second = await send('/ops/funding-batches?name=second', 'text/csv', csvBody(rows, 2000), {
      total: rows * 24,
    });
    expect(second.status).toBe(503);
    expect(second.body).toMatchObject({ code: 'OVERLOADED', status: 503 });
    expect(Number(second.retryAfter)).toBeGreaterThanOrEqual(1);
    release();
    const firstAnswer = await first;
    expect(firstAnswer.status, JSON.stringify(firstAnswer.body).slice(0, 300)).toBe(202);
    expect(await stored()).toEqual({ batches: before.batches + 1, fundings: before.fundings + rows });
    // The budget is given back: the second upload, sent again, is stored.
    const again = await send('/ops/funding-batches?name=second', 'text/csv', csvBody(rows, 2000), { total: rows * 24 });
    expect(again.status).toBe(202);
  }, 180_000);
});

describe('the links a batch names', () => {
  it('are looked up within the upload budget: past it, 503 OVERLOADED with nothing stored; within it, each unknown link named', async () => {
    const before = await stored();
    // Each item read holds 256 bytes of the 4 MiB budget, and each distinct link its TOKEN recipients name 256 more
    // while they are looked up: 9,000 of them need 4.6 MB, 5,000 need 2.6 MB.
    const tokenBatch = (items: number) =>
      JSON.stringify({
        name: `tokens-${items}`,
        items: Array.from({ length: items }, (_, index) => ({
          reference: `t-${index}`,
          recipient: { type: 'TOKEN', linkId: randomUUID() },
          amount: { currency: 'PHP', value: '1.00' },
        })),
      });
    const post = (body: string) =>
      send('/ops/funding-batches', 'application/json', [body], { total: Buffer.byteLength(body) });
    const over = await post(tokenBatch(9_000));
    expect(over.status, JSON.stringify(over.body).slice(0, 300)).toBe(503);
    expect(over.body).toMatchObject({ code: 'OVERLOADED' });
    expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
    const within = await post(tokenBatch(5_000));
    expect(within.status).toBe(422);
    expect(within.body).toMatchObject({ code: 'BATCH_INVALID', errorCount: 5_000 });
    expect((within.body.errors as Array<{ code: string }>)[0]).toMatchObject({ code: 'LINK_NOT_FOUND' });
    expect(await stored()).toEqual(before);
  });
});

describe('JSON bodies of shapes no batch has, against the API process under its heap cap', () => {
  /** About 32 MB: `head`, `unit` repeated in pieces of 64 KiB, then `tail`. */
  function* body32(head: string, unit: string, tail: string): Generator<string> {
    yield head;
    const piece = unit.repeat(Math.ceil(65_536 / unit.length));
    for (let sent = 0; sent < 32_000_000; sent += piece.length) yield piece;
    yield tail;
  }
  const good = JSON.stringify({
    reference: 'g-1',
    recipient: { type: 'CODE', code: '1234567' },
    amount: { currency: 'PHP', value: '1.00' },
  });

  it('a member outside items, items as an object, one huge item, a huge string: each 422 BATCH_INVALID while read; single fundings beside them accepted; the API alive', async () => {
    const before = await stored();
    const to = { base: api.base, key: funder };
    const shapes = {
      'a member outside items': body32('{"name":"pad","items":[],"pad":[', '{},', '{}]}'),
      'items as an object': body32('{"name":"object","items":{', `"k":${good},`, `"z":${good}}}`),
      'one huge item': body32(`{"name":"huge item","items":[${good},{"reference":"huge","pad":[`, '{},', '{}]}]}'),
      'a huge string': body32(`{"name":"huge string","items":[${good}],"source":{"type":"`, 'x', '"}}'),
    };
    // Each twice, all at once, with single fundings sent while they are read.
    const uploads = Object.entries(shapes).flatMap(([name, pieces]) => {
      const all = [...pieces];
      return [0, 1].map(
        async () =>
          [
            name,
            await send('/ops/funding-batches', 'application/json', all, { total: 32_000_000, to }).catch(
              (error: unknown) => String(error),
            ),
          ] as const,
      );
    });
    const fundings = Array.from({ length: 20 }, async (_, index) => {
      await new Promise((resolve) => setTimeout(resolve, index * 50));
      const response = await fetch(`${api.base}/ops/fundings`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${funder}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({
          recipient: { type: 'CODE', code: String(2_000_000 + index) },
          amount: { currency: 'PHP', value: '1.00' },
        }),
      });
      return response.status;
    }).map((status) => status.catch((error: unknown) => String(error)));
    const answers = await Promise.all(uploads);
    // Before anything else: did the API live through it (a crash resets every connection)?
    expect(api.exited(), api.output().slice(-2000)).toBeNull();
    for (const [name, answer] of answers) {
      if (typeof answer === 'string')
        throw new Error(
          `${name}: no answer (${answer}); the API: ${JSON.stringify(api.exited())} ${api.output().slice(-600)}`,
        );
      expect(answer.status, `${name}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(422);
      expect(answer.body, name).toMatchObject({ code: 'BATCH_INVALID', errorCount: 1, errors: [{ code: 'INVALID' }] });
      expect(answer.sentWhenAnswered, `${name}: bytes sent when the answer came`).toBeLessThan(8 * 1024 * 1024);
    }
    expect(await Promise.all(fundings)).toEqual(Array.from({ length: 20 }, () => 202));
    expect(api.exited(), api.output()).toBeNull();
    expect((await fetch(`${api.base}/healthz`)).status).toBe(200);
    expect(api.output()).not.toMatch(/heap out of memory/i);
    const after = await stored();
    expect(after.batches).toBe(before.batches);
    expect(after.fundings).toBe(before.fundings + 20);
  }, 240_000);
});
