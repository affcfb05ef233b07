// Funding batches through the ops API (contract-decisions section 14), on real PostgreSQL and
// Temporal: every row checked before anything is stored (422 BATCH_INVALID with each row's
// problem), the total held when the batch is stored, approval by another key above the threshold
// (never the creator's: 403 SAME_APPROVER), rejection releasing the holds, moves refused from the
// wrong state (409 BATCH_STATE), one batch per Idempotency-Key, and its items and report read back.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

let stack: PartnerStack;
const approver = 'b'.repeat(40);
const reader = 'r'.repeat(40);
const splitter = 's'.repeat(40);
const otherSplitter = 't'.repeat(40);
/** Ana's keys: two she uploads with (the CLI's, a script's), one she approves with, all hers by OPS_KEY_OWNERS. */
const anaUploads = 'u'.repeat(40);
const anaScript = 'w'.repeat(40);
const anaApproves = 'v'.repeat(40);

beforeAll(async () => {
  stack = await startPartnerStack({
    extraOpsKeys: [
      `checker:approve+read:${approver}`,
      `auditor:read:${reader}`,
      `splitter:fund+read:${splitter}`,
      `splitter-two:fund+read:${otherSplitter}`,
      `ana-cli:fund+read:${anaUploads}`,
      `ana-script:fund+read:${anaScript}`,
      `ana-approver:approve+read:${anaApproves}`,
    ],
    // 100.00: batches of 100.00 or more wait for approval. Ana's two keys are hers (OPS_KEY_OWNERS).
    batches: {
      approvalThreshold: 100_000n,
      maxInFlight: 4,
      keyOwners: new Map([
        ['ana-cli', 'oidc:00u-ana'],
        ['ana-script', 'oidc:00u-ana'],
        ['ana-approver', 'oidc:00u-ana'],
      ]),
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const item = (reference: string, code: string, value = '10.00') => ({
  reference,
  recipient: { type: 'CODE', code },
  amount: { currency: 'PHP', value },
});

async function send(
  path: string,
  init: { method?: string; body?: unknown; csv?: string; key?: string; as?: string } = {},
) {
  const headers: Record<string, string> = {};
  if (init.key) headers['idempotency-key'] = init.key;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.csv !== undefined) headers['content-type'] = 'text/csv';
  if (init.as) headers.authorization = `Bearer ${init.as}`;
  const response = await (init.as
    ? fetch(`${stack.apiBase}${path}`, { method: init.method ?? 'GET', headers, ...bodyOf(init) })
    : stack.opsFetch(path, { method: init.method ?? 'GET', headers, ...bodyOf(init) }));
  const text = await response.text();
  return {
    status: response.status,
    text,
    json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : null,
  };
}
const bodyOf = (init: { body?: unknown; csv?: string }) =>
  init.body !== undefined ? { body: JSON.stringify(init.body) } : init.csv !== undefined ? { body: init.csv } : {};

const counts = async () => ({
  batches: await stack.database.fundingBatch.count(),
  fundings: await stack.database.funding.count(),
  holds: await stack.database.ledgerTransaction.count({ where: { kind: 'HOLD' } }),
});
const treasuryHeld = async () =>
  ((await send('/ops/accounts/TREASURY')).json as { held: { value: string } }).held.value;

describe('funding batches', () => {
  it('checks every row before anything is stored: 422 BATCH_INVALID names each bad row, its reference, field and code', async () => {
    const before = await counts();
    const answer = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'May rewards',
        items: [
          item('ok-1', '1234567'),
          item('ok-1', '1234567'),
          item('bad ref', '1234567'),
          item('short-code', '123'),
          item('too-precise', '1234567', '1.005'),
        ],
      },
    });
    expect(answer.status).toBe(422);
    expect(answer.json).toMatchObject({ code: 'BATCH_INVALID', errorCount: 4 });
    expect(
      (answer.json!.errors as Array<{ row: number; code: string; field: string }>).map((error) => [
        error.row,
        error.field,
        error.code,
      ]),
    ).toEqual([
      [2, 'reference', 'DUPLICATE_REFERENCE'],
      [3, 'reference', 'INVALID'],
      [4, 'recipient.code', 'INVALID'],
      [5, 'amount.value', 'INVALID'],
    ]);
    // A row bad in itself and a good one whose TOKEN names no link: both named in one answer, in row order (before: the
    // unknown link was named only once the bad row was mended and the batch sent again).
    const unknownLink = randomUUID();
    const both = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'both kinds',
        items: [
          item('fine', '1234567'),
          {
            reference: 'nobody',
            recipient: { type: 'TOKEN', linkId: unknownLink },
            amount: { currency: 'PHP', value: '5.00' },
          },
          item('short', '123'),
        ],
      },
    });
    expect(both.status).toBe(422);
    expect(both.json).toMatchObject({
      code: 'BATCH_INVALID',
      errorCount: 2,
      errors: [
        { row: 2, reference: 'nobody', field: 'recipient.linkId', code: 'LINK_NOT_FOUND' },
        { row: 3, reference: 'short', field: 'recipient.code', code: 'INVALID' },
      ],
    });
    const bothCsv = await send('/ops/funding-batches?name=both', {
      method: 'POST',
      key: randomUUID(),
      csv: `reference,recipient_type,recipient,amount\nbad-amount,CODE,1234567,1.005\nnobody,TOKEN,${unknownLink},5.00\n`,
    });
    expect(bothCsv.json).toMatchObject({
      code: 'BATCH_INVALID',
      errorCount: 2,
      errors: [
        { row: 1, field: 'amount.value', code: 'INVALID' },
        { row: 2, field: 'recipient.linkId', code: 'LINK_NOT_FOUND' },
      ],
    });
    // The CSV form: a wrong header is one problem on row 0; an empty name is the request's.
    const csv = await send('/ops/funding-batches?name=payroll', {
      method: 'POST',
      key: randomUUID(),
      csv: 'ref,type,to,amount\n',
    });
    expect(csv.json).toMatchObject({ code: 'BATCH_INVALID', errorCount: 1, errors: [{ row: 0, field: 'header' }] });
    const unnamed = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      csv: 'reference,recipient_type,recipient,amount\nr1,CODE,1234567,1.00\n',
    });
    expect(unnamed.json).toMatchObject({ code: 'BATCH_INVALID', errors: [{ row: 0, field: 'name' }] });
    expect(await counts()).toEqual(before);
  });

  it('never repeats a cash-in code whole in its refusal: a code in the reference column, a repeated one, or one the JSON broke at', async () => {
    // Found by a read: a CSV row whose columns slipped put its code first, and the 422 named it as the row's reference
    // whole, as did a repeated reference's words; a JSON body broken at a code was answered with the parser's words,
    // the code among them (contract-decisions section 3: a code is never shown whole).
    const slipped = await send('/ops/funding-batches?name=slipped', {
      method: 'POST',
      key: randomUUID(),
      csv: 'reference,recipient_type,recipient,amount\n7654321,100.00\n7654321,100.00\n',
    });
    expect(slipped.status).toBe(422);
    expect(
      (slipped.json!.errors as Array<{ row: number; reference: string; code: string; message: string }>).map(
        (error) => [error.row, error.reference, error.code, error.message.includes('*****21')],
      ),
    ).toEqual([
      [1, '*****21', 'INVALID', false],
      [2, '*****21', 'INVALID', false],
      [2, '*****21', 'DUPLICATE_REFERENCE', true],
    ]);
    const broken = await stack.opsFetch('/ops/funding-batches', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      body: '{"name":"x","items":[{"reference":"a","recipient":{"type":"CODE","code" "7654321"}}]}',
    });
    const refusal = await broken.text();
    expect({ status: broken.status, code: (JSON.parse(refusal) as { code: string }).code }).toEqual({
      status: 400,
      code: expect.any(String),
    });
    for (const text of [slipped.text, refusal]) expect(text).not.toContain('7654321');
    expect(JSON.parse(refusal)).toMatchObject({
      detail: expect.stringContaining('not valid JSON (an unexpected string)'),
    });
  });

  it('refuses a row whose reference holds its own cash-in code: a reference is stored and shown whole, a code never', async () => {
    // Found by the second read of the refusals' masking: a good row could carry its code as its reference, stored in
    // the clear beside the sealed code and shown whole in the items, the report and the console.
    const before = await counts();
    const answer = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'codes as references',
        items: [item('7654321', '7654321'), item('INV-7654321', '7654321'), item('76543210', '7654321')],
      },
    });
    expect(answer.status).toBe(422);
    expect(
      (answer.json!.errors as Array<{ row: number; reference: string; field: string; code: string }>).map((error) => [
        error.row,
        error.reference,
        error.field,
        error.code,
      ]),
    ).toEqual([
      [1, '*****21', 'reference', 'INVALID'],
      [2, 'INV-*****21', 'reference', 'INVALID'],
    ]);
    expect(answer.text).not.toContain('7654321');
    expect(await counts()).toEqual(before);
  });

  it('holds the total when stored; above the threshold it waits for another key’s approval, never the creator’s', async () => {
    const users = await Promise.all([0, 1, 2].map(() => stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' })));
    const codes = await Promise.all(users.map(async (user) => (await stack.admin.cashInCode(user.userId)).code));
    const heldBefore = await treasuryHeld();
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: { name: 'Cash-back', items: codes.map((code, index) => item(`cb-${index}`, code, '40.00')) },
    });
    expect(created.status).toBe(202);
    const batch = created.json as {
      batchId: string;
      state: string;
      total: unknown;
      counts: Record<string, number>;
      createdBy: string;
    };
    expect(batch).toMatchObject({
      state: 'AWAITING_APPROVAL',
      total: { count: 3, amount: { currency: 'PHP', value: '120.00' } },
      counts: { PENDING: 3 },
      createdBy: 'default',
    });
    expect(Number(await treasuryHeld()) - Number(heldBefore)).toBeCloseTo(120, 2);

    // The creator's key may not approve its own batch; a read-only key may not approve at all.
    expect((await send(`/ops/funding-batches/${batch.batchId}/approve`, { method: 'POST' })).json).toMatchObject({
      status: 403,
      code: 'SAME_APPROVER',
    });
    expect((await send(`/ops/funding-batches/${batch.batchId}/approve`, { method: 'POST', as: reader })).status).toBe(
      403,
    );
    // Rejected by the checker: no item starts, the holds are released.
    const rejected = await send(`/ops/funding-batches/${batch.batchId}/reject`, { method: 'POST', as: approver });
    expect(rejected.json).toMatchObject({
      state: 'REJECTED',
      counts: { CANCELLED: 3 },
      completedAt: expect.any(String),
    });
    expect(await treasuryHeld()).toBe(heldBefore);
    // Each item's timeline says the batch was rejected, by whom. Before: "batch cancelled by" the checker, a cancel
    // nobody made.
    const events = await stack.database.fundingEvent.findMany({
      where: { funding: { batchId: batch.batchId }, status: 'FAILED' },
      select: { detail: true },
    });
    expect(events.map((event) => event.detail)).toEqual(Array(3).fill(expect.stringMatching(/^batch rejected by /)));
    // A decided batch moves no further, whoever asks: its creator too is told its state, not who they are (found by a
    // contract read: the creator's approve of a rejected batch was 403 SAME_APPROVER).
    for (const as of [approver, undefined])
      expect(
        (await send(`/ops/funding-batches/${batch.batchId}/approve`, { method: 'POST', ...(as ? { as } : {}) })).json,
      ).toMatchObject({ status: 409, code: 'BATCH_STATE' });
    expect((await send(`/ops/funding-batches/${batch.batchId}/pause`, { method: 'POST' })).json).toMatchObject({
      status: 409,
      code: 'BATCH_STATE',
    });
    expect((await send(`/ops/funding-batches/${randomUUID()}/cancel`, { method: 'POST' })).json).toMatchObject({
      status: 404,
      code: 'BATCH_NOT_FOUND',
    });
  });

  it('is one batch per Idempotency-Key: the same request answers it again, another request is refused', async () => {
    const key = randomUUID();
    const body = { name: 'Once', items: [item('a', '1234567', '5.00'), item('b', '7654321', '5.00')] };
    const first = await send('/ops/funding-batches', { method: 'POST', key, body });
    expect(first.status).toBe(202);
    const again = await send('/ops/funding-batches', { method: 'POST', key, body });
    expect(again.status).toBe(200);
    expect(again.json!.batchId).toBe(first.json!.batchId);
    const other = await send('/ops/funding-batches', { method: 'POST', key, body: { ...body, name: 'Twice' } });
    expect(other.json).toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await stack.database.fundingBatch.count({ where: { idempotencyKey: key } })).toBe(1);
  });

  it('refuses a batch its source cannot cover (422 INSUFFICIENT_FUNDS), storing nothing', async () => {
    const before = await counts();
    const broke = `broke-${randomUUID()}`;
    const answer = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'Too much',
        source: { type: 'USER_BALANCE', partnerUserId: broke },
        items: [item('x1', '1234567', '5.00'), item('x2', '7654321', '5.00')],
      },
    });
    expect(answer.json).toMatchObject({ status: 422, code: 'INSUFFICIENT_FUNDS' });
    expect(await counts()).toEqual(before);
  });

  it('lists batches, pages their items and writes their report as CSV', async () => {
    const created = await send('/ops/funding-batches?name=Payroll%20CSV', {
      method: 'POST',
      key: randomUUID(),
      csv: 'reference,recipient_type,recipient,amount\r\np-2,CODE,1234567,60.00\r\np-1,CODE,7654321,50.00\r\n',
    });
    expect(created.json).toMatchObject({
      name: 'Payroll CSV',
      state: 'AWAITING_APPROVAL',
      total: { count: 2, amount: { value: '110.00' } },
    });
    const batchId = created.json!.batchId as string;
    const listed = await send('/ops/funding-batches?limit=1');
    expect(listed.json).toMatchObject({ items: [{ batchId }], nextCursor: batchId });
    const older = await send(`/ops/funding-batches?limit=50&cursor=${batchId}`);
    expect((older.json!.items as Array<{ batchId: string }>).map((batch) => batch.batchId)).not.toContain(batchId);
    // Other test files may leave batches in this database: ours is among those waiting, and only those are listed.
    const waiting = (await send('/ops/funding-batches?state=AWAITING_APPROVAL')).json!.items as Array<{
      batchId: string;
      state: string;
    }>;
    expect(waiting).toContainEqual(expect.objectContaining({ batchId, state: 'AWAITING_APPROVAL' }));
    expect(new Set(waiting.map((batch) => batch.state))).toEqual(new Set(['AWAITING_APPROVAL']));
    const page = await send(`/ops/funding-batches/${batchId}/items?limit=1`);
    expect(page.json).toMatchObject({
      items: [{ reference: 'p-1', status: 'PENDING', amount: { value: '50.00' } }],
      nextCursor: 'p-1',
    });
    const next = await send(`/ops/funding-batches/${batchId}/items?limit=1&cursor=p-1`);
    expect(next.json).toMatchObject({ items: [{ reference: 'p-2' }], nextCursor: null });
    // Each item is a funding that also carries its batch and reference (contract section 14), read or listed.
    const itemId = (page.json!.items as Array<{ fundingId: string }>)[0]!.fundingId;
    expect((await send(`/ops/fundings/${itemId}`)).json).toMatchObject({
      fundingId: itemId,
      batchId,
      reference: 'p-1',
    });
    const listedFundings = (await send('/ops/fundings?limit=200')).json!.items as Array<Record<string, unknown>>;
    expect(listedFundings.find((funding) => funding.fundingId === itemId)).toMatchObject({ batchId, reference: 'p-1' });
    expect((await send(`/ops/funding-batches/${batchId}/items?status=NOPE`)).status).toBe(400);
    const report = await send(`/ops/funding-batches/${batchId}/report?format=csv`);
    expect(report.text.split('\r\n')).toEqual([
      '"reference","funding_id","status","error_code","currency","amount"',
      expect.stringMatching(/^"p-1","[0-9a-f-]{36}","PENDING","","PHP","50.00"$/),
      expect.stringMatching(/^"p-2","[0-9a-f-]{36}","PENDING","","PHP","60.00"$/),
      '',
    ]);
    // Cancelled while waiting for approval: its items never start.
    expect((await send(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' })).json).toMatchObject({
      state: 'CANCELLED',
      counts: { CANCELLED: 2 },
    });
  });

  it('filters items as it counts them: FAILED lists no cancelled item, CANCELLED lists each; a cursor that is no reference is 400', async () => {
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'Filtered',
        items: [
          item('f-1', '1234567', '60.00'),
          item('f-2', '7654321', '60.00'),
          item('f-3', '1234567', '60.00'),
          item('f-4', '7654321', '60.00'),
        ],
      },
    });
    const batchId = created.json!.batchId as string;
    // Two items failed on their own (the wallet refused one; one with no code) before the rest were cancelled.
    await stack.database.funding.updateMany({
      where: { batchId, batchReference: 'f-1' },
      data: { status: 'FAILED', errorCode: 'M133' },
    });
    await stack.database.funding.updateMany({
      where: { batchId, batchReference: 'f-4' },
      data: { status: 'FAILED', errorCode: null },
    });
    const cancelled = await send(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' });
    expect(cancelled.json).toMatchObject({ state: 'CANCELLED', counts: { FAILED: 2, CANCELLED: 2 } });
    const listed = async (status: string) =>
      (
        (await send(`/ops/funding-batches/${batchId}/items?status=${status}`)).json!.items as Array<{
          reference: string;
          status: string;
        }>
      ).map((row) => `${row.reference} ${row.status}`);
    expect(await listed('FAILED')).toEqual(['f-1 FAILED', 'f-4 FAILED']);
    expect(await listed('CANCELLED')).toEqual(['f-2 CANCELLED', 'f-3 CANCELLED']);
    for (const cursor of ['%00', 'a%20b', 'f-1%0A', '%E2%80%AE']) {
      const answer = await send(`/ops/funding-batches/${batchId}/items?cursor=${cursor}`);
      expect({ cursor, status: answer.status, code: answer.json?.code }).toEqual({
        cursor,
        status: 400,
        code: 'VALIDATION_ERROR',
      });
    }
  });

  it('runs only once approved: a resume of a batch awaiting approval is refused (409) and leaves it waiting', async () => {
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: { name: 'Needs a checker', items: [item('n-1', '1234567', '60.00'), item('n-2', '7654321', '60.00')] },
    });
    expect(created.json).toMatchObject({ state: 'AWAITING_APPROVAL', createdBy: 'default' });
    const batchId = created.json!.batchId as string;
    expect((await send(`/ops/funding-batches/${batchId}/resume`, { method: 'POST' })).json).toMatchObject({
      status: 409,
      code: 'BATCH_STATE',
    });
    const stored = await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } });
    expect(stored).toMatchObject({ state: 'AWAITING_APPROVAL', approvedBy: null, startedAt: null });
    expect((await send(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' })).json).toMatchObject({
      state: 'CANCELLED',
      counts: { CANCELLED: 2 },
    });
  });

  it('answers a move asked for while another move holds the batch within moments, 503 with Retry-After and nothing changed, never waiting behind it', async () => {
    // Found by a read: a pause, an approve or a second cancel waited behind a cancel ending 100,000 items (minutes) on
    // the batch's row, each holding a database slot and a connection meanwhile: a few filled the process's line.
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: { name: 'Held', items: [item('h-1', '1234567', '60.00'), item('h-2', '7654321', '60.00')] },
    });
    const batchId = created.json!.batchId as string;
    // Another move under way: its transaction holds the batch's row.
    const other = new pg.Client({ connectionString: testDatabaseUrl() });
    await other.connect();
    onTestFinished(() => other.end());
    await other.query({ text: 'BEGIN' });
    await other.query({ text: 'SELECT 1 FROM funding_batch WHERE id = $1 FOR UPDATE', values: [batchId] });
    const answers: Array<{ status: number; retryAfter: string | null; code: unknown; detail: unknown }> = [];
    for (const move of ['reject', 'cancel', 'cancel']) {
      const answered = await Promise.race([
        stack.opsFetch(`/ops/funding-batches/${batchId}/${move}`, { method: 'POST' }),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000)),
      ]);
      // Before: no answer while the row was held.
      expect(answered, move).not.toBeNull();
      const body = (await answered!.json()) as { code?: string; detail?: string };
      answers.push({
        status: answered!.status,
        retryAfter: answered!.headers.get('retry-after'),
        code: body.code,
        detail: body.detail,
      });
    }
    for (const answer of answers)
      expect(answer).toEqual({
        status: 503,
        retryAfter: '5',
        code: 'OVERLOADED',
        detail: expect.stringContaining('is being changed just now'),
      });
    await other.query({ text: 'ROLLBACK' });
    expect(await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).toMatchObject({
      state: 'AWAITING_APPROVAL',
      rejectedBy: null,
      cancelledBy: null,
    });
    // Once the other move is done, the same request is taken.
    expect((await send(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' })).json).toMatchObject({
      state: 'CANCELLED',
    });
  });

  it('counts a key and the person who owns it (OPS_KEY_OWNERS) as one: their batches add up, and one never approves the other’s', async () => {
    // Found by a read: a key and a person never compared equal, so one person uploaded with the CLI's key and approved
    // in the console (or with another key of theirs), and split a total across the two under the threshold.
    const upload = (name: string, as: string, code: string) =>
      send('/ops/funding-batches', {
        method: 'POST',
        key: randomUUID(),
        as,
        body: { name, items: [item(`${name}-1`, code, '60.00')] },
      });
    const first = await upload('ana-a', anaUploads, '1234567');
    expect(first.json).toMatchObject({ state: 'RUNNING', createdBy: 'ana-cli' });
    // Her second, through another key of hers, counts with the first: 120.00 waits for approval.
    const second = await upload('ana-b', anaScript, '7654321');
    expect(second.json).toMatchObject({ state: 'AWAITING_APPROVAL' });
    const batchId = second.json!.batchId as string;
    // Her approving key is her too: 403 SAME_APPROVER, and the batch still waits.
    const own = await send(`/ops/funding-batches/${batchId}/approve`, { method: 'POST', as: anaApproves });
    expect([own.status, own.json?.code]).toEqual([403, 'SAME_APPROVER']);
    expect(await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).toMatchObject({
      state: 'AWAITING_APPROVAL',
      approvedBy: null,
    });
    // Another person's key approves it.
    expect(
      (await send(`/ops/funding-batches/${batchId}/approve`, { method: 'POST', as: approver })).json,
    ).toMatchObject({ state: 'RUNNING', approvedBy: 'checker' });
  });

  it('ends a cancelled batch and its items not started together: its batch.cancelled event counts them CANCELLED, each announced funding.failed', async () => {
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: { name: 'Called off', items: [item('c-1', '1234567', '70.00'), item('c-2', '7654321', '70.00')] },
    });
    const batchId = created.json!.batchId as string;
    expect((await send(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' })).status).toBe(200);
    const events = await stack.database.webhookEvent.findMany({ where: { type: 'batch.cancelled' } });
    const ours = events
      .map((event) => JSON.parse(event.body) as { data: { batchId: string; counts: Record<string, number> } })
      .find((event) => event.data.batchId === batchId);
    expect(ours?.data.counts).toEqual({ CANCELLED: 2 });
    const items = await stack.database.funding.findMany({ where: { batchId }, select: { id: true } });
    const failed = await stack.database.webhookEvent.findMany({
      where: { fundingId: { in: items.map((row) => row.id) } },
    });
    expect(failed.map((event) => event.type)).toEqual(['funding.failed', 'funding.failed']);
    // Each item's event carries the funding view, with its batch and reference.
    expect(
      failed.map((event) => (JSON.parse(event.body) as { data: { batchId: string; reference: string } }).data),
    ).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ batchId, reference: 'c-1' }),
        expect.objectContaining({ batchId, reference: 'c-2' }),
      ]),
    );
  });

  it('counts toward the approval threshold what the same key drew from the same source in the last 24 hours without approval: batches split under it wait like one over it', async () => {
    const batchOf = async (as: string, name: string, value: string) => {
      const answer = await send('/ops/funding-batches', {
        method: 'POST',
        key: randomUUID(),
        as,
        body: { name, items: [item('only', '1234567', value)] },
      });
      expect(answer.status, name).toBe(202);
      return answer.json as { batchId: string; state: string };
    };
    // 60.00 alone is under the threshold (100.00): it runs.
    const first = await batchOf(splitter, 'first half', '60.00');
    expect(first.state).toBe('RUNNING');
    // 50.00 more by the same key from the same source: 110.00 in 24 hours, so it waits.
    const second = await batchOf(splitter, 'second half', '50.00');
    expect(second.state).toBe('AWAITING_APPROVAL');
    // Another key's batches are its own.
    expect((await batchOf(otherSplitter, 'someone else', '50.00')).state).toBe('RUNNING');
    // An approved batch was looked at by a second person: it no longer counts.
    expect(
      (await send(`/ops/funding-batches/${second.batchId}/approve`, { method: 'POST', as: approver })).json,
    ).toMatchObject({ state: 'RUNNING', approvedBy: 'checker' });
    expect((await batchOf(splitter, 'after the approval', '30.00')).state).toBe('RUNNING');
    // 60.00 + 30.00 without approval now: 20.00 more reaches the threshold.
    expect((await batchOf(splitter, 'one more', '20.00')).state).toBe('AWAITING_APPROVAL');
    // What is older than 24 hours no longer counts.
    await stack.database.fundingBatch.updateMany({
      where: { createdBy: 'splitter' },
      data: { createdAt: new Date(Date.now() - 25 * 3_600_000) },
    });
    expect((await batchOf(splitter, 'a new day', '90.00')).state).toBe('RUNNING');
  });

  it('compares the approver’s name with the creator’s as key names are compared: without regard to case', async () => {
    const created = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: { name: 'Renamed key', items: [item('r-1', '1234567', '150.00')] },
    });
    const batchId = created.json!.batchId as string;
    // Created by a key since renamed `CHECKER` (OPS_API_KEYS changed its case): the checker is the same person.
    await stack.database.fundingBatch.update({ where: { id: batchId }, data: { createdBy: 'CHECKER' } });
    expect(
      (await send(`/ops/funding-batches/${batchId}/approve`, { method: 'POST', as: approver })).json,
    ).toMatchObject({ status: 403, code: 'SAME_APPROVER' });
    expect((await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).state).toBe(
      'AWAITING_APPROVAL',
    );
  });

  it('refuses an amount in another currency than PHP at every money route: 422 CURRENCY_NOT_ACCEPTED, nothing stored', async () => {
    const before = {
      ...(await counts()),
      payments: await stack.database.payment.count(),
      ledger: await stack.database.ledgerTransaction.count(),
    };
    const usd = { currency: 'USD', value: '10.00' };
    // A currency walletflow knows nothing of is refused the same way, not 400 for its shape (it was, until 2026-12-04).
    const gbp = { currency: 'GBP', value: '10.00' };
    const { linkId } = await (
      await import('../support/embedded-link.ts')
    ).createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '50.00' });
    // JPY with a decimal its currency has not: still the currency's refusal, not a 400 for its decimals.
    for (const amount of [usd, gbp, { currency: 'JPY', value: '10.5' }]) {
      const funding = await send('/ops/fundings', {
        method: 'POST',
        key: randomUUID(),
        body: { recipient: { type: 'CODE', code: '1234567' }, amount },
      });
      expect(funding.json, amount.currency).toMatchObject({ status: 422, code: 'CURRENCY_NOT_ACCEPTED' });
      const payment = await send('/ops/payments', { method: 'POST', key: randomUUID(), body: { linkId, amount } });
      expect(payment.json, amount.currency).toMatchObject({ status: 422, code: 'CURRENCY_NOT_ACCEPTED' });
      const adjustment = await send(`/ops/accounts/currency-${randomUUID()}/adjustments`, {
        method: 'POST',
        key: randomUUID(),
        body: { amount: { ...amount, value: '-10.00' }, reason: 'goodwill' },
      });
      expect(adjustment.json, amount.currency).toMatchObject({ status: 422, code: 'CURRENCY_NOT_ACCEPTED' });
    }
    // Not a currency code at all: a malformed body.
    const lower = await send('/ops/fundings', {
      method: 'POST',
      key: randomUUID(),
      body: { recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'php', value: '10.00' } },
    });
    expect(lower.json).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    const batch = await send('/ops/funding-batches', {
      method: 'POST',
      key: randomUUID(),
      body: {
        name: 'Dollars',
        items: [
          { ...item('d-1', '1234567'), amount: usd },
          { ...item('d-2', '7654321'), amount: gbp },
        ],
      },
    });
    expect(batch.json).toMatchObject({
      status: 422,
      code: 'BATCH_INVALID',
      errorCount: 2,
      errors: [
        { row: 1, field: 'amount.currency', code: 'CURRENCY_NOT_ACCEPTED' },
        { row: 2, code: 'CURRENCY_NOT_ACCEPTED' },
      ],
    });
    expect({
      ...(await counts()),
      payments: await stack.database.payment.count(),
      ledger: await stack.database.ledgerTransaction.count(),
    }).toEqual(before);
  });

  it('takes the CSV form’s source from the query: source=TREASURY or USER_BALANCE with partnerUserId, partnerUserId alone; a contradiction is 400', async () => {
    const before = await counts();
    const csv = 'reference,recipient_type,recipient,amount\ns-1,CODE,1234567,5.00\n';
    const broke = `broke-${randomUUID()}`;
    // USER_BALANCE, said either way: the user's balance is asked to pay (and cannot).
    for (const query of [`source=USER_BALANCE&partnerUserId=${broke}`, `partnerUserId=${broke}`]) {
      expect(
        (await send(`/ops/funding-batches?name=by-user&${query}`, { method: 'POST', key: randomUUID(), csv })).json,
        query,
      ).toMatchObject({ status: 422, code: 'INSUFFICIENT_FUNDS', detail: expect.stringContaining(`USER:${broke}`) });
    }
    // A contradiction, or a USER_BALANCE without its user, or another source: 400 naming the field.
    for (const [query, field] of [
      [`source=TREASURY&partnerUserId=${broke}`, 'partnerUserId'],
      ['source=USER_BALANCE', 'partnerUserId'],
      ['source=CARD', 'source'],
    ] as const) {
      const answer = await send(`/ops/funding-batches?name=bad&${query}`, { method: 'POST', key: randomUUID(), csv });
      expect(answer.json, query).toMatchObject({
        status: 400,
        code: 'VALIDATION_ERROR',
        detail: expect.stringContaining(field),
      });
    }
    expect(await counts()).toEqual(before);
    const treasury = await send('/ops/funding-batches?name=by-treasury&source=TREASURY', {
      method: 'POST',
      key: randomUUID(),
      csv,
    });
    expect(treasury.json).toMatchObject({ source: { type: 'TREASURY' }, total: { count: 1 } });
    expect(
      (await send(`/ops/funding-batches/${treasury.json!.batchId as string}/cancel`, { method: 'POST' })).status,
    ).toBe(200);
  });

  it('refuses the CSV form’s query beside a JSON body (400 naming it): never a batch the treasury pays in place of the user the query named', async () => {
    const before = await counts();
    const heldBefore = await treasuryHeld();
    const alice = `alice-${randomUUID()}`;
    for (const query of [
      `source=USER_BALANCE&partnerUserId=${alice}`,
      `partnerUserId=${alice}`,
      `source=TREASURY&partnerUserId=${alice}`,
      'name=May',
    ]) {
      const answer = await send(`/ops/funding-batches?${query}`, {
        method: 'POST',
        key: randomUUID(),
        body: { name: 'May', items: [item('q1', '1234567', '5.00')] },
      });
      // Before: 202, a batch with source TREASURY and its total held on the treasury.
      expect(answer.json, query).toMatchObject({
        status: 400,
        code: 'VALIDATION_ERROR',
        detail: expect.stringContaining(query.split('=')[0]!),
      });
    }
    expect(await counts()).toEqual(before);
    expect(await treasuryHeld()).toEqual(heldBefore);
  });

  it('answers 400 for a list cursor that names no batch', async () => {
    expect((await send(`/ops/funding-batches?cursor=${randomUUID()}`)).json).toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
    });
  });
});
