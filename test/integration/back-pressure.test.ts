// Back-pressure (docs/architecture.md, admission and back-pressure): a burst of money requests is
// admitted, queued or refused with 503 or 429, Retry-After and a code, never answered 500; a
// request refused for load stored nothing, and its retry with the same Idempotency-Key gets the
// right answer. Every answer of each burst is asserted, not only the accepted ones. The API runs
// with a pool of 3 connections, so the test's burst is as much more than its pool can serve at once
// as a burst of thousands is for a production API's 10 on a busy machine; no worker runs, so
// nothing but the admission is measured.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchRecordsOn, codeItems } from '../support/batch-records.ts';
import { consoleSessionWithKey } from '../support/console-key-sign-in.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { createDatabase } from '../../lib/database.ts';
import { overloadOf } from '../../lib/admission.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { connectionReset, failRawQueries } from '../support/raw-failures.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack({ databaseMaxConnections: 2 });
});
afterAll(() => stack.close());

const amount = (value: string) => ({ currency: 'PHP', value });

interface Answer {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  detail?: string | undefined;
}

async function post(path: string, body: unknown, key: string): Promise<Answer> {
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
  return { status: response.status, code, retryAfter: response.headers.get('retry-after') };
}

/** What a burst's answers were, by status and code. */
function tally(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) {
    const key = `${answer.status}${answer.code && answer.status !== 202 ? ` ${answer.code}` : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** A refusal for load says so, and says when to come back. */
const isLoadRefusal = (answer: Answer) =>
  (answer.status === 503 || answer.status === 429) &&
  answer.retryAfter !== null &&
  Number(answer.retryAfter) >= 1 &&
  typeof answer.code === 'string';

/** A linked wallet; its partner user is `wallet:<profileId>`, as onboarding names it. */
async function linkedUser() {
  const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
  return { linkId, partnerUserId: `wallet:${user.profileId}` };
}

/** A funding stored through the API (no worker runs: it stays PENDING), its id. */
async function storedPending(prefix: string): Promise<string> {
  const key = `${prefix}-${randomUUID()}`;
  const created = await post(
    '/ops/fundings',
    { recipient: { type: 'CODE', code: '1234567' }, amount: amount('1.00') },
    key,
  );
  expect(created.status).toBe(202);
  return (await stack.database.funding.findUniqueOrThrow({ where: { idempotencyKey: key }, select: { id: true } })).id;
}

/** The error Prisma's pg adapter gives a statement whose backend PostgreSQL ended (pg_terminate_backend, failover). */
const lostConnection = () =>
  new Prisma.PrismaClientKnownRequestError('terminating connection due to administrator command', {
    code: 'P2010',
    clientVersion: 'test',
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: '57P01', kind: 'postgres' } } },
  });

describe('a burst of fundings', () => {
  it('1000 at once from the treasury to 100 recipients: no 500; each refusal says when to retry, and the retry with its key is accepted', async () => {
    const recipients = await Promise.all(Array.from({ length: 100 }, () => linkedUser()));
    const requests = Array.from({ length: 1000 }, (_, index) => ({
      key: `burst-${randomUUID()}`,
      body: { recipient: { type: 'TOKEN', linkId: recipients[index % 100]!.linkId }, amount: amount('1.00') },
    }));
    const answers = await Promise.all(requests.map((request) => post('/ops/fundings', request.body, request.key)));
    const counts = tally(answers);
    // Every answer is specified: accepted, or refused for load with Retry-After and a code.
    expect(
      answers.filter((answer) => answer.status >= 500 && !isLoadRefusal(answer)),
      JSON.stringify(counts),
    ).toEqual([]);
    expect(
      answers.every((answer) => answer.status === 202 || isLoadRefusal(answer)),
      JSON.stringify(counts),
    ).toBe(true);

    // A refusal stored nothing: retried with the same key (after its Retry-After), it is accepted.
    let pending = requests.filter((_, index) => answers[index]!.status !== 202);
    for (let round = 0; round < 20 && pending.length > 0; round += 1) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const retried = await Promise.all(pending.map((request) => post('/ops/fundings', request.body, request.key)));
      expect(
        retried.every((answer) => answer.status === 202 || isLoadRefusal(answer)),
        JSON.stringify(tally(retried)),
      ).toBe(true);
      pending = pending.filter((_, index) => retried[index]!.status !== 202);
    }
    expect(pending).toEqual([]);
    const stored = await stack.database.funding.count({
      where: { idempotencyKey: { in: requests.map((request) => request.key) } },
    });
    expect(stored).toBe(1000);
  }, 180_000);

  it('100 at once drawing on one user’s balance of 100.00: 10 × 202, 90 × 422 INSUFFICIENT_FUNDS, 0 × 5xx', async () => {
    const { linkId, partnerUserId } = await linkedUser();
    expect(
      (
        await post(
          `/ops/accounts/${encodeURIComponent(partnerUserId)}/adjustments`,
          { amount: amount('100.00'), reason: 'winnings' },
          randomUUID(),
        )
      ).status,
    ).toBe(201);
    const body = {
      recipient: { type: 'TOKEN', linkId },
      amount: amount('10.00'),
      source: { type: 'USER_BALANCE', partnerUserId },
    };
    // Other users' fundings at the same time, as in production: the pool is shared.
    const others = await Promise.all(Array.from({ length: 20 }, () => linkedUser()));
    const [own, crowd] = await Promise.all([
      Promise.all(Array.from({ length: 100 }, () => post('/ops/fundings', body, randomUUID()))),
      Promise.all(
        others.flatMap((other) =>
          Array.from({ length: 10 }, () =>
            post(
              '/ops/fundings',
              { recipient: { type: 'TOKEN', linkId: other.linkId }, amount: amount('1.00') },
              randomUUID(),
            ),
          ),
        ),
      ),
    ]);
    expect(tally(own)).toEqual({ 202: 10, '422 INSUFFICIENT_FUNDS': 90 });
    expect(
      crowd.every((answer) => answer.status === 202 || isLoadRefusal(answer)),
      JSON.stringify(tally(crowd)),
    ).toBe(true);
  }, 120_000);
});

describe('bursts on the other money routes: the same for payments and adjustments', () => {
  it('500 payments and 500 adjustments at once: no 500; each refusal says when to retry', async () => {
    const users = await Promise.all(Array.from({ length: 50 }, () => linkedUser()));
    const [payments, adjustments] = await Promise.all([
      Promise.all(
        Array.from({ length: 500 }, (_, index) =>
          post('/ops/payments', { linkId: users[index % 50]!.linkId, amount: amount('1.00') }, randomUUID()),
        ),
      ),
      Promise.all(
        Array.from({ length: 500 }, (_, index) =>
          post(
            `/ops/accounts/${encodeURIComponent(users[index % 50]!.partnerUserId)}/adjustments`,
            { amount: amount('1.00'), reason: 'burst' },
            randomUUID(),
          ),
        ),
      ),
    ]);
    expect(
      payments.every((answer) => answer.status === 202 || isLoadRefusal(answer)),
      JSON.stringify(tally(payments)),
    ).toBe(true);
    expect(
      adjustments.every((answer) => answer.status === 201 || isLoadRefusal(answer)),
      JSON.stringify(tally(adjustments)),
    ).toBe(true);
  }, 120_000);
});

/**
 * `work` on a partner stack whose API and worker connect as a role PostgreSQL lets open 3 connections, its pool 10: a
 * burst opens more than it may, as a production burst meets max_connections or a pooler's limit.
 */
async function onLimitedRole(work: (limited: PartnerStack, role: string) => Promise<void>): Promise<void> {
  const role = `walletflow_limited_${process.pid}`;
  await stack.database.$executeRawUnsafe(`DROP ROLE IF EXISTS ${role}`);
  // With a password: the suite's own PostgreSQL (no DATABASE_URL) asks for one (without, every request was 500).
  const password = randomUUID();
  await stack.database.$executeRawUnsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' CONNECTION LIMIT 3`);
  await stack.database.$executeRawUnsafe(
    `GRANT USAGE ON SCHEMA public TO ${role}; GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`,
  );
  await stack.database.$executeRawUnsafe(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
  const url = new URL(testDatabaseUrl());
  url.username = role;
  url.password = password;
  const limited = await startPartnerStack({ databaseUrl: url.href });
  try {
    await work(limited, role);
  } finally {
    await limited.close();
    await stack.database.$executeRawUnsafe(`DROP OWNED BY ${role}`);
    await stack.database.$executeRawUnsafe(`DROP ROLE ${role}`);
  }
}

describe('PostgreSQL refusing connections under a burst', () => {
  it('a burst past the role’s connection limit (53300, "too many connections"): every answer 2xx, or 503 OVERLOADED with Retry-After; a write sent again with its key is stored once; none 500, the session URL’s neither', async () => {
    await onLimitedRole(async (limited) => {
      const keys = Array.from({ length: 60 }, () => `refused-${randomUUID()}`);
      const answerOf = async (response: Response): Promise<Answer> => {
        const body = (await response.json()) as { code?: string; detail?: string };
        return {
          status: response.status,
          code: body.code,
          detail: body.detail,
          retryAfter: response.headers.get('retry-after'),
        };
      };
      const read = async () => answerOf(await limited.opsFetch('/ops/fundings?limit=5'));
      const write = async (key: string) =>
        answerOf(
          await limited.opsFetch('/ops/fundings', {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ recipient: { type: 'CODE', code: '1234567' }, amount: amount('1.00') }),
          }),
        );
      const [reads, writes] = await Promise.all([
        Promise.all(Array.from({ length: 60 }, read)),
        Promise.all(keys.map(write)),
      ]);
      const counts = { reads: tally(reads), writes: tally(writes) };
      // Before: the refused connections' errors (P2037, P2010 of code 53300) were answered 500 INTERNAL.
      expect(
        reads.every((answer) => answer.status === 200 || (isLoadRefusal(answer) && answer.code === 'OVERLOADED')),
        JSON.stringify(counts),
      ).toBe(true);
      expect(
        writes.every((answer) => answer.status === 202 || (isLoadRefusal(answer) && answer.code === 'OVERLOADED')),
        JSON.stringify(counts),
      ).toBe(true);
      // The limit was met: some were refused.
      expect(
        [...reads, ...writes].some((answer) => answer.status === 503),
        JSON.stringify(counts),
      ).toBe(true);
      // A refusal says to send the same request again (a refused connection may come after the funding was stored, at
      // the answer's read): retried with its key, each is accepted, and stored once.
      for (const answer of [...reads, ...writes].filter((each) => each.status === 503))
        expect(answer.detail, JSON.stringify(answer)).toMatch(/same request|nothing was stored/);
      let pending = keys.filter((_, index) => writes[index]!.status !== 202);
      for (let round = 0; round < 20 && pending.length > 0; round += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const retried = await Promise.all(pending.map(write));
        // 202 stored now, 200 stored before the refusal (the same key answers the funding it stored).
        const accepted = (answer: Answer) => answer.status === 202 || answer.status === 200;
        expect(
          retried.every((answer) => accepted(answer) || isLoadRefusal(answer)),
          JSON.stringify(tally(retried)),
        ).toBe(true);
        pending = pending.filter((_, index) => !accepted(retried[index]!));
      }
      expect(pending).toEqual([]);
      expect(await stack.database.funding.count({ where: { idempotencyKey: { in: keys } } })).toBe(keys.length);
      // The operator's session URL calls, a burst of them: each 200, or 503 OVERLOADED (it was a 500).
      const user = await limited.admin.createUser({ kycLevel: 'KYC1', balance: '1.00' });
      // Beside a burst of reads, as the session URL meets one in production.
      const [launches] = await Promise.all([
        Promise.all(
          Array.from({ length: 40 }, () =>
            limited.admin.call<{ sessionId?: string; partnerStatus?: number }>('POST', '/launch', {
              userId: user.userId,
            }),
          ),
        ),
        Promise.all(Array.from({ length: 80 }, read)),
      ]);
      const partnerAnswers = launches.map((launch) => (launch.status === 200 ? 200 : launch.body.partnerStatus));
      expect(
        partnerAnswers.every((status) => status === 200 || status === 503),
        JSON.stringify(partnerAnswers),
      ).toBe(true);
    });
  }, 120_000);

  it('a batch’s report whose rows cannot be read before its first bytes: a status, never a dropped connection (503 OVERLOADED with Retry-After for a refused connection, a 500 for a table it may not read)', async () => {
    await onLimitedRole(async (limited, role) => {
      // A report smaller than one write (16 KiB): every row is read before anything is sent.
      const batchId = randomUUID();
      const items = codeItems(batchId, 40, {
        reference: (index) => `refused-${String(index).padStart(3, '0')}`,
        code: (index) => String(2_000_000 + index),
        amount: 100n,
      });
      const { credit, insertBatch } = batchRecordsOn(stack.database);
      const partnerUserId = `report-${randomUUID()}`;
      await credit(partnerUserId, 4000n);
      await insertBatch(batchId, partnerUserId, items, 0n);
      /** A download's status, code and Retry-After, and its body read to the end (a dropped connection throws). */
      const download = async (): Promise<Answer & { lines: number }> => {
        const response = await limited.opsFetch(`/ops/funding-batches/${batchId}/report`);
        const body = await response.text();
        const problem = response.status === 200 ? {} : (JSON.parse(body) as { code?: string });
        return {
          status: response.status,
          code: problem.code,
          retryAfter: response.headers.get('retry-after'),
          lines: body.split('\r\n').filter(Boolean).length,
        };
      };
      // Beside a burst of reads, some downloads are refused a connection: each answer is the whole report, or says to
      // come back.
      const [downloads, reads] = await Promise.all([
        Promise.all(Array.from({ length: 60 }, download)),
        Promise.all(Array.from({ length: 60 }, () => limited.opsFetch('/ops/fundings?limit=5').then((r) => r.status))),
      ]);
      const counts = tally(downloads);
      expect(
        downloads.every(
          (answer) =>
            (answer.status === 200 && answer.lines === items.length + 1) ||
            (isLoadRefusal(answer) && answer.code === 'OVERLOADED'),
        ),
        JSON.stringify(counts),
      ).toBe(true);
      expect(reads.every((status) => status === 200 || status === 503)).toBe(true);
      expect(counts['503 OVERLOADED'], JSON.stringify(counts)).toBeGreaterThan(0);
      // A table the role may not read: the batch is found, its first page fails; an error's status, not a cut (before,
      // the connection was dropped, as it was for a first page refused a connection).
      await stack.database.$executeRawUnsafe(`REVOKE SELECT ON funding FROM ${role}`);
      const refused = await download();
      expect(refused).toMatchObject({ status: 500, code: 'INTERNAL' });
      const again = await limited.opsFetch(`/ops/funding-batches/${batchId}/report`);
      expect(again.headers.get('content-disposition')).toBeNull();
      await again.text();
    });
  }, 120_000);

  it('a cancel whose answer’s read is refused a connection says the funding was cancelled, not that what it stored is not known: the ops API and the console alike', async () => {
    /** `send` with the next read of a funding with its events (the answer's) refused a connection, once. */
    const withReadBackRefused = async (send: () => Promise<Response>) => {
      const delegate = stack.database.funding;
      const findUnique = delegate.findUnique;
      let armed = true;
      (delegate as { findUnique: unknown }).findUnique = (args: { include?: unknown }) => {
        if (armed && args.include) {
          armed = false;
          return Promise.reject(new Error('timeout exceeded when trying to connect'));
        }
        return findUnique.call(delegate, args as Parameters<typeof findUnique>[0]);
      };
      try {
        const response = await send();
        expect(armed).toBe(false);
        expect(response.status).toBe(503);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        return await response.text();
      } finally {
        (delegate as { findUnique: unknown }).findUnique = findUnique;
      }
    };
    const cancelled = async (fundingId: string) =>
      (await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId } })).errorCode;

    const viaOps = await storedPending('done');
    const problem = JSON.parse(
      await withReadBackRefused(() => stack.opsFetch(`/ops/fundings/${viaOps}/cancel`, { method: 'POST' })),
    ) as { code?: string; detail?: string };
    // Before: "what this request stored, if anything, is not known here; send the same request again", and the
    // repeat answered 409 FUNDING_NOT_CANCELLABLE of the funding this request had cancelled.
    expect(problem.code).toBe('OVERLOADED');
    expect(problem.detail).toMatch(/^the funding was cancelled, but it could not be read back under load/);
    expect(await cancelled(viaOps)).toBe('CANCELLED');

    // The console's form, under a person's session (an ops key's here): a page that says it was done.
    const viaConsole = await storedPending('done');
    const cookie = await consoleSessionWithKey(stack.apiBase, stack.opsKey);
    const page = await fetch(`${stack.apiBase}/console/fundings/${viaConsole}`, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const said = await withReadBackRefused(() =>
      fetch(`${stack.apiBase}/console/fundings/${viaConsole}/cancel`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: stack.apiBase, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf }).toString(),
      }),
    );
    expect(said).toContain('The funding was cancelled, but it cannot be shown just now');
    expect(said).not.toContain('Try again');
    // A way back to the funding, not a reload that would send the form again.
    expect(said).toContain(`<a href="/console/fundings/${viaConsole}">Back to it</a>`);
    expect(await cancelled(viaConsole)).toBe('CANCELLED');
  });

  it('a read whose connection is lost mid-statement (a failover: 57P01) answers 503 with Retry-After, the ops API and the console alike', async () => {
    const id = await storedPending('lost');
    const lost = lostConnection();
    const delegate = stack.database.funding;
    const findUnique = delegate.findUnique;
    (delegate as { findUnique: unknown }).findUnique = () => Promise.reject(lost);
    const cookie = await consoleSessionWithKey(stack.apiBase, stack.opsKey);
    try {
      // Before: 500 INTERNAL for a read that changed nothing.
      const viaOps = await stack.opsFetch(`/ops/fundings/${id}`);
      expect([viaOps.status, ((await viaOps.json()) as { code?: string }).code]).toEqual([503, 'OVERLOADED']);
      expect(Number(viaOps.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const viaConsole = await fetch(`${stack.apiBase}/console/fundings/${id}`, { headers: { cookie } });
      expect(viaConsole.status).toBe(503);
      expect(Number(viaConsole.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await viaConsole.text()).toContain('lost its database connection');
    } finally {
      (delegate as { findUnique: unknown }).findUnique = findUnique;
    }
  });

  it('a raw read whose connection is reset mid-statement (a proxy or pooler restarting: no PostgreSQL state) answers 503 with Retry-After, not 500', async () => {
    // The adapter's form of it: P2010, its error of kind ConnectionClosed, no PostgreSQL state.
    const restore = failRawQueries(stack.database, 'settlement_run', connectionReset());
    try {
      // A day's settlement, whose first read is raw. Before: 500 INTERNAL.
      const answer = await stack.opsFetch('/ops/settlements/2020-01-01');
      expect([answer.status, ((await answer.json()) as { code?: string }).code]).toEqual([503, 'OVERLOADED']);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } finally {
      restore();
    }
  });

  it('a wallet-app page or a login step whose connection is lost mid-statement answers 503 with Retry-After in words, not 500', async () => {
    const lost = lostConnection();
    const sessions = stack.database.embeddedSession as unknown as { findUnique: unknown };
    const findUnique = sessions.findUnique;
    const states = stack.database.loginState as unknown as { updateMany: unknown };
    const updateMany = states.updateMany;
    sessions.findUnique = () => Promise.reject(lost);
    states.updateMany = () => Promise.reject(lost);
    try {
      // The wallet app opening the landing page with a session id it does not hold (the read of why it is refused).
      const landing = await fetch(`${stack.apiBase}/app?sessionId=${randomUUID()}`, { redirect: 'manual' });
      const landingPage = await landing.text();
      // Before: 500, "Something went wrong".
      expect([landing.status, Number(landing.headers.get('retry-after')) >= 1]).toEqual([503, true]);
      expect(landingPage).toContain('Busy right now');
      // The money page's poll of its activity (its web session's read lost): JSON, as its 200 and 401 are. Before: the
      // HTML page, which only the status polls were spared.
      const restore = failRawQueries(stack.database, 'FROM app_session', lost);
      try {
        const poll = await fetch(`${stack.apiBase}/app/activity`, {
          headers: { cookie: `walletflow_app=${'a'.repeat(43)}` },
        });
        expect([poll.status, Number(poll.headers.get('retry-after')) >= 1]).toEqual([503, true]);
        expect(poll.headers.get('content-type')).toContain('application/json');
        expect(((await poll.json()) as { code: string }).code).toBe('OVERLOADED');
      } finally {
        restore();
      }
      // The login's callback, its state spent in the same statement that was lost.
      const state = 's'.repeat(43);
      const callback = await fetch(`${stack.apiBase}/connect/callback?state=${state}&code=c`, {
        headers: { cookie: `walletflow_login=${state}` },
        redirect: 'manual',
      });
      const callbackPage = await callback.text();
      expect([callback.status, Number(callback.headers.get('retry-after')) >= 1]).toEqual([503, true]);
      expect(callbackPage).toContain('Please start the login again in a few seconds');
    } finally {
      sessions.findUnique = findUnique;
      states.updateMany = updateMany;
    }
  });

  it('a statement outside a transaction waits for a pool connection a bounded time, then fails as a load refusal (it waited without any bound)', async () => {
    // A pool of one connection, held by a statement of 2 s; the wait bound 300 ms (production's: 10 s).
    const pool = createDatabase(testDatabaseUrl(), { maxConnections: 1, connectTimeoutMs: 300 });
    try {
      const holding = pool.$queryRaw`SELECT pg_sleep(2)::text AS slept`.then(() => 'held');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const waited = await pool.$queryRaw`SELECT 1 AS one`.then(
        () => null,
        (error: unknown) => error,
      );
      // Before: no error at all, the read waited for the connection as long as the holder held it (it fails before the
      // holder is done: had it waited for the connection, it would have been answered).
      expect(waited).toBeInstanceOf(Error);
      expect(overloadOf(waited)).toMatchObject({ retryAfterSeconds: expect.any(Number) });
      expect(await holding).toBe('held');
    } finally {
      await pool.$disconnect();
    }
  });
});
