// Token refresh at volume: a batch paying 300 linked users by TOKEN, every
// access token expired, with a single CODE funding started every second beside it, on a worker as
// production runs it (worker/main.ts, its own pool of 10). Each item's one pass refreshes its
// link while it creates; the money and the links must hold, and so must the service: the batch
// completes, the single fundings beside it end, no rotated pair is lost. Speed is the bench's to
// measure (docs/benchmarks.md); the deadlines here only keep a stalled run from hanging the suite.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process.ts';

const USERS = 300;
const finalStatuses = ['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'];

let stack: PartnerStack;
let worker: WorkerProcess;

beforeAll(async () => {
  stack = await startPartnerStack();
  worker = startWorkerProcess({ ...stack.workerEnv(), LOG_LEVEL: 'info' });
  await worker.polling();
}, 120_000);
afterAll(async () => {
  await worker?.stop('SIGTERM');
  await stack?.close();
});

interface Answer {
  status: number;
  json: Record<string, unknown>;
}

async function send(path: string, init: { method?: string; key?: string; body?: unknown } = {}): Promise<Answer> {
  const response = await stack.opsFetch(path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.key ? { 'idempotency-key': init.key } : {}) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** A POST sent again with its key while the API answers 503 (a load refusal stores nothing). */
async function postUntilStored(path: string, body: unknown): Promise<Answer> {
  const key = randomUUID();
  for (let attempt = 1; ; attempt += 1) {
    const answer = await send(path, { method: 'POST', key, body });
    if (answer.status !== 503 || attempt >= 20) return answer;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** `count` linked users whose access tokens walletflow believes expired: each is refreshed before its first use. */
async function expiredLinks(count: number): Promise<Array<{ userId: string; linkId: string }>> {
  const links: Array<{ userId: string; linkId: string }> = [];
  // Ten at a time: the fixture's transactions share the API's pool with the stack's own work (twenty at once, on a
  // loaded machine, once waited past Prisma's two seconds for a connection).
  for (let start = 0; start < count; start += 10) {
    const made = await Promise.all(
      Array.from({ length: Math.min(10, count - start) }, () =>
        createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' }, { expired: true }),
      ),
    );
    links.push(...made.map(({ user, linkId }) => ({ userId: user.userId, linkId })));
  }
  return links;
}

describe('token refresh at volume', () => {
  it(`a batch paying ${USERS} users by TOKEN, every access token expired, with a single funding started every second beside it: the batch completes with every item APPROVED, every link stays ACTIVE, no refresh token is reused, every single funding ends`, async () => {
    const links = await expiredLinks(USERS);
    const codeUser = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const refreshesBefore = (await stack.admin.ledger()).refreshes.length;

    const created = await postUntilStored('/ops/funding-batches', {
      name: 'expired tokens at volume',
      items: links.map((link, index) => ({
        reference: `user-${index + 1}`,
        recipient: { type: 'TOKEN', linkId: link.linkId },
        amount: { currency: 'PHP', value: '1.00' },
      })),
    });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const batchId = created.json.batchId as string;

    // A single CODE funding every second while the batch runs.
    const singles: Array<{ fundingId: string; startedAt: number }> = [];
    let batch: Answer['json'] = created.json;
    const batchDeadline = Date.now() + 240_000;
    while (batch.state === 'RUNNING' && Date.now() < batchDeadline) {
      const { code } = await stack.admin.cashInCode(codeUser.userId);
      const startedAt = Date.now();
      const single = await postUntilStored('/ops/fundings', {
        recipient: { type: 'CODE', code },
        amount: { currency: 'PHP', value: '1.00' },
      });
      expect(single.status, JSON.stringify(single.json)).toBe(202);
      singles.push({ fundingId: single.json.fundingId as string, startedAt });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 1000 - Date.now())));
      batch = (await send(`/ops/funding-batches/${batchId}`)).json;
    }
    expect(
      batch.state,
      `batch after ${Math.round((Date.now() - (batchDeadline - 240_000)) / 1000)} s: ${JSON.stringify(batch.counts)}\n${worker.output().slice(-3000)}`,
    ).toBe('COMPLETED');
    expect(batch.counts).toEqual({ APPROVED: USERS });

    // Every single funding started beside it ends, and is paid.
    const ends = await waitFor(
      'every single funding final',
      async () => {
        const rows = await stack.database.funding.findMany({
          where: { id: { in: singles.map((single) => single.fundingId) } },
          select: { id: true, status: true, updatedAt: true },
        });
        return rows.every((row) => finalStatuses.includes(row.status)) ? rows : undefined;
      },
      120_000,
    );
    expect(ends.map((row) => row.status)).toEqual(singles.map(() => 'APPROVED'));
    expect(singles.length).toBeGreaterThan(0);

    // The links: each still ACTIVE, refreshed exactly once at the wallet; no refresh was refused
    // (a rotated refresh token presented again answers REFRESH_TOKEN_INVALID).
    const statuses = await stack.database.link.groupBy({
      by: ['status'],
      where: { id: { in: links.map((link) => link.linkId) } },
      _count: { _all: true },
    });
    expect(statuses.map((row) => [row.status, row._count._all])).toEqual([['ACTIVE', USERS]]);
    const refreshes = (await stack.admin.ledger()).refreshes.slice(refreshesBefore);
    const perUser = new Map<string, number>();
    for (const refresh of refreshes) perUser.set(refresh.userId, (perUser.get(refresh.userId) ?? 0) + 1);
    expect(links.filter((link) => perUser.get(link.userId) !== 1)).toEqual([]);
    expect(
      await stack.database.walletCall.count({ where: { operation: 'op.tokens', errorCode: 'REFRESH_TOKEN_INVALID' } }),
    ).toBe(0);
    const tokenVersions = await stack.database.tokenSet.findMany({
      where: { linkId: { in: links.map((link) => link.linkId) } },
      select: { version: true },
    });
    expect(tokenVersions.every((row) => row.version === 2)).toBe(true);

    // The money: each item's transfer executed exactly once.
    const transfers = new Map(
      (await stack.admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]),
    );
    const items = await stack.database.funding.findMany({ where: { batchId }, select: { transferId: true } });
    expect(items.filter((item) => transfers.get(item.transferId ?? '')?.executions !== 1)).toEqual([]);
  }, 420_000);
});
