// A big batch stored, and cancelled, while other money requests keep coming (docs/architecture.md,
// admission and back-pressure; funding batches): the batch's holds lock the treasury and IN_FLIGHT
// accounts, which every single funding, adjustment and funding's final write locks too, and a
// batch drawn on a user's balance waits in that user's lane of the admission line with the user's
// other requests. Neither may refuse or fail another request: unrelated writes are all accepted;
// the same user's requests are accepted or refused 503 OVERLOADED with Retry-After, storing
// nothing. Every answer is asserted; how long they took is the bench's to measure, with batches of
// 100,000 (`walletflow bench --batch-store 100000`, docs/benchmarks.md), and the lane's bound on a
// wait is test/unit/admission.test.ts's. 10,000 items keep the store and the cancel under way
// across many of the other requests. No worker runs: the items stay PENDING.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
const ITEMS = 10_000;

beforeAll(async () => {
  // Every batch waits for approval: stored, held, and never run.
  stack = await startPartnerStack({ batches: { approvalThreshold: 1n, maxInFlight: 4 } });
});
afterAll(() => stack?.close());

const amount = (value: string) => ({ currency: 'PHP', value });

interface Answer {
  kind: string;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
  key: string;
}

async function post(kind: string, path: string, body: unknown, key = randomUUID()): Promise<Answer> {
  const sentAt = performance.now();
  const response = await stack.opsFetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { code?: string }).code;
  } catch {
    code = undefined;
  }
  return {
    kind,
    status: response.status,
    code,
    retryAfter: response.headers.get('retry-after'),
    ms: Math.round(performance.now() - sentAt),
    key,
  };
}

/** Closed loops sending `next()` until `during` settles; every answer kept. */
async function alongside<T>(
  during: Promise<T>,
  loops: Array<() => Promise<Answer>>,
): Promise<{ result: T; answers: Answer[] }> {
  const answers: Answer[] = [];
  let done = false;
  const running = loops.map(async (next) => {
    while (!done) answers.push(await next());
  });
  try {
    return { result: await during, answers };
  } finally {
    done = true;
    await Promise.all(running);
  }
}

function tally(answers: readonly Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) {
    const key = `${answer.kind} ${answer.status}${answer.code && answer.status >= 400 ? ` ${answer.code}` : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function batchCsv(prefix: string): string {
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let index = 0; index < ITEMS; index += 1)
    lines.push(`${prefix}-${index},CODE,${String(1_000_000 + index)},1.00`);
  return `${lines.join('\n')}\n`;
}

async function sendBatch(query: string, csv: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await stack.opsFetch(`/ops/funding-batches?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'text/csv', 'idempotency-key': randomUUID() },
    body: csv,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function fundedUser(balance: string) {
  const partnerUserId = `load-${randomUUID()}`;
  expect(
    (
      await post('adjustment', `/ops/accounts/${encodeURIComponent(partnerUserId)}/adjustments`, {
        amount: amount(balance),
        reason: 'float',
      })
    ).status,
  ).toBe(201);
  return partnerUserId;
}

describe('a big batch stored and cancelled beside other money requests', () => {
  it('from the treasury: single treasury fundings, other users’ fundings, adjustments and payments are all accepted', async () => {
    const others = await Promise.all(Array.from({ length: 4 }, () => fundedUser('10000.00')));
    const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
    let code = 2_000_000;
    const loops = [
      () =>
        post('treasury funding', '/ops/fundings', {
          recipient: { type: 'CODE', code: String(code++) },
          amount: amount('1.00'),
        }),
      () =>
        post('treasury funding', '/ops/fundings', {
          recipient: { type: 'CODE', code: String(code++) },
          amount: amount('1.00'),
        }),
      () =>
        post('user funding', '/ops/fundings', {
          recipient: { type: 'CODE', code: String(code++) },
          amount: amount('1.00'),
          source: { type: 'USER_BALANCE', partnerUserId: others[code % others.length]! },
        }),
      () =>
        post('user funding', '/ops/fundings', {
          recipient: { type: 'CODE', code: String(code++) },
          amount: amount('1.00'),
          source: { type: 'USER_BALANCE', partnerUserId: others[code % others.length]! },
        }),
      () =>
        post('adjustment', `/ops/accounts/${encodeURIComponent(others[code++ % others.length]!)}/adjustments`, {
          amount: amount('1.00'),
          reason: 'bonus',
        }),
      () => post('payment', '/ops/payments', { linkId, amount: amount('1.00') }),
    ];
    const csv = batchCsv('t');

    const stored = await alongside(sendBatch('name=treasury-load', csv), loops);
    expect(stored.result.status, JSON.stringify(stored.result.body).slice(0, 300)).toBe(202);
    const batchId = stored.result.body.batchId as string;
    const cancelled = await alongside(
      stack.opsFetch(`/ops/funding-batches/${batchId}/cancel`, { method: 'POST' }).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as Record<string, unknown>,
      })),
      loops,
    );
    expect(cancelled.result).toMatchObject({ status: 200, body: { state: 'CANCELLED', counts: { CANCELLED: ITEMS } } });

    for (const [phase, answers] of [
      ['store', stored.answers],
      ['cancel', cancelled.answers],
    ] as const) {
      const counts = tally(answers);
      // Every answer: accepted (202, an adjustment 201), nothing else; each kind got through.
      const refused = answers.filter((answer) => answer.status !== 202 && answer.status !== 201);
      expect(
        refused,
        `${phase}: ${JSON.stringify(counts)}; refused: ${JSON.stringify(refused.map(({ kind, status, code, ms }) => ({ kind, status, code, ms })))}`,
      ).toEqual([]);
      expect(new Set(answers.map((answer) => answer.kind)), `${phase}: ${JSON.stringify(counts)}`).toEqual(
        new Set(['treasury funding', 'user funding', 'adjustment', 'payment']),
      );
    }
  }, 180_000);

  it('from a user’s balance: that user’s own requests are accepted or refused 503 with Retry-After, storing nothing; other users’ are accepted', async () => {
    const owner = await fundedUser('200000.00');
    const others = await Promise.all(Array.from({ length: 2 }, () => fundedUser('10000.00')));
    let code = 3_000_000;
    const ownFunding = () =>
      post('own funding', '/ops/fundings', {
        recipient: { type: 'CODE', code: String(code++) },
        amount: amount('1.00'),
        source: { type: 'USER_BALANCE', partnerUserId: owner },
      });
    const otherFunding = () =>
      post('other funding', '/ops/fundings', {
        recipient: { type: 'CODE', code: String(code++) },
        amount: amount('1.00'),
        source: { type: 'USER_BALANCE', partnerUserId: others[code % others.length]! },
      });
    const csv = batchCsv('u');

    const stored = await alongside(sendBatch(`name=user-load&partnerUserId=${encodeURIComponent(owner)}`, csv), [
      ownFunding,
      ownFunding,
      ownFunding,
      otherFunding,
    ]);
    expect(stored.result.status, JSON.stringify(stored.result.body).slice(0, 300)).toBe(202);
    const counts = tally(stored.answers);
    const own = stored.answers.filter((answer) => answer.kind === 'own funding');
    const other = stored.answers.filter((answer) => answer.kind === 'other funding');
    // The owner's: accepted, or refused for load with Retry-After.
    expect(
      own.filter(
        (answer) =>
          !(
            answer.status === 202 ||
            (answer.status === 503 && answer.code === 'OVERLOADED' && Number(answer.retryAfter) >= 1)
          ),
      ),
      JSON.stringify(counts),
    ).toEqual([]);
    // Other users are not in that lane: all accepted at once.
    expect(other.length, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(
      other.filter((answer) => answer.status !== 202),
      JSON.stringify(counts),
    ).toEqual([]);
    // A refused request stored nothing; an accepted one is stored once.
    const refusedKeys = own.filter((answer) => answer.status === 503).map((answer) => answer.key);
    expect(await stack.database.funding.count({ where: { idempotencyKey: { in: refusedKeys } } })).toBe(0);
    const acceptedKeys = own.filter((answer) => answer.status === 202).map((answer) => answer.key);
    expect(await stack.database.funding.count({ where: { idempotencyKey: { in: acceptedKeys } } })).toBe(
      acceptedKeys.length,
    );
  }, 180_000);
});
