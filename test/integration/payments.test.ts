// Merchant payments end to end: the ops API starts payWallet, the activities create and execute
// at the sandbox with the user's embedded token, and the sandbox ledger witnesses each debit.
// Unknown execute outcomes park the payment in NEEDS_REVIEW until ops resolve it; our own payment id
// answered PAYMENT_ALREADY_EXECUTED is proof that it executed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PaymentView } from '../../domain/payment.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitUntil } from '../support/wait-for.ts';
import { RESOLVE_DEADLINE_MS, resolveReview } from '../../reviews/resolve-review.ts';
import { resolvePaymentUpdate, type ResolvePaymentUpdateInput } from '../../workflows/pay-wallet.contract.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

async function linkedUser(balance: string) {
  return createEmbeddedLink(stack, { kycLevel: 'KYC1', balance });
}

async function postPayment(body: unknown, key: string = randomUUID()) {
  const response = await stack.opsFetch('/ops/payments', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as PaymentView & { code?: string; detail?: string } };
}

async function waitFor(id: string, statuses: string[], timeoutMs = 60_000): Promise<PaymentView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const payment = (await (await stack.opsFetch(`/ops/payments/${id}`)).json()) as PaymentView;
    if (statuses.includes(payment.status)) return payment;
    if (Date.now() > deadline) throw new Error(`payment ${id} still ${payment.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

const ledgerPayment = async (paymentId: string | null) =>
  (await stack.admin.ledger()).payments.find((payment) => payment.paymentId === paymentId);

const resolve = (id: string, body: unknown, actor?: string) =>
  stack.opsFetch(`/ops/payments/${id}/resolve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(actor ? { 'x-ops-actor': actor } : {}) },
    body: JSON.stringify(body),
  });

describe('payments', () => {
  it('succeed with one debit, the wallet payment id and fee recorded', async () => {
    const { user, linkId } = await linkedUser('100.00');
    const started = await postPayment({ linkId, amount: { currency: 'PHP', value: '30.00' } });
    expect(started.status).toBe(202);
    // The answer waits for the wallet's create: it names the payment by the wallet's paymentId,
    // which is a handle for it from then on.
    expect(started.body.paymentId).toEqual(expect.any(String));
    expect(started.body.paymentId).not.toBe(started.body.id);
    expect((await ledgerPayment(started.body.paymentId))?.executions).toBeLessThanOrEqual(1);
    const payment = await waitFor(started.body.paymentId!, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW']);
    expect(payment.id).toBe(started.body.id);
    expect(payment.paymentId).toBe(started.body.paymentId);
    expect(payment).toMatchObject({
      status: 'SUCCEEDED',
      amount: { currency: 'PHP', value: '30.00' },
      fee: { currency: 'PHP', value: '0.00' },
      error: null,
    });
    expect(payment.paymentId).toEqual(expect.any(String));
    expect(payment.events.map((event) => event.status)).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'SUCCEEDED']);
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('70.00');
    // Readable by the wallet's payment id too.
    const byWalletId = (await (await stack.opsFetch(`/ops/payments/${payment.paymentId}`)).json()) as PaymentView;
    expect(byWalletId.id).toBe(payment.id);
  });

  it('end FAILED with a message fit for the user on insufficient balance, nothing debited', async () => {
    const { user, linkId } = await linkedUser('10.00');
    const payment = await waitFor(
      (await postPayment({ linkId, amount: { currency: 'PHP', value: '50.00' } })).body.id,
      ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'],
    );
    expect(payment.status).toBe('FAILED');
    expect(payment.error?.code).toBe('INSUFFICIENT_BALANCE');
    expect(payment.error?.message).toMatch(/balance is not enough/);
    expect((await stack.admin.user(user.userId)).balance).toBe('10.00');
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(0);
  });

  /**
   * A payment of 20.00 from a user with 100.00 whose first execute takes effect and is answered `answer` (absent: the
   * sandbox's 5xx page) instead of its result; the fault is lifted once the wallet has executed it.
   */
  async function executedUnder(answer: { status?: number; code?: string }) {
    const { user, linkId } = await linkedUser('100.00');
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-after-effect', rate: 1, ...answer }]);
    const started = await postPayment({ linkId, amount: { currency: 'PHP', value: '20.00' } });
    try {
      const deadline = Date.now() + 20_000;
      while (
        !(await stack.admin.ledger()).payments.some(
          (payment) => payment.userId === user.userId && payment.executions === 1,
        )
      ) {
        if (Date.now() > deadline) throw new Error('the first execute never took effect');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await stack.admin.clearFaults();
    }
    return { user, started };
  }

  it('an execute whose answer is lost, then PAYMENT_ALREADY_EXECUTED: SUCCEEDED with the evidence, not review', async () => {
    // The first execute takes effect and its answer is lost; the fault is lifted before the retry (1 s later).
    const { user, started } = await executedUnder({});
    // Our own payment id answered "already executed" after our own execute: it executed (contract section 5).
    const settled = await waitFor(started.body.id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW']);
    expect(settled.status).toBe('SUCCEEDED');
    expect(settled.review).toBeNull();
    const last = settled.events.at(-1);
    expect(last?.status).toBe('SUCCEEDED');
    expect(last?.detail).toMatch(/PAYMENT_ALREADY_EXECUTED/);
    expect(last?.requestReferenceNo).toMatch(/^[0-9a-f-]{36}$/);
    expect((await ledgerPayment(settled.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('80.00');
  });

  it.each([
    ['a page under 400 (a gateway’s, no service body)', { status: 400 }],
    ['INSUFFICIENT_BALANCE under 409, not the service’s 400', { status: 409, code: 'INSUFFICIENT_BALANCE' }],
  ])(
    'an execute that took effect, answered %s, is no refusal: the outcome stays unknown, and the next execute’s 409 proves it executed once',
    async (_answer, answer) => {
      const { user, started } = await executedUnder(answer);
      const settled = await waitFor(started.body.id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'], 60_000);
      // Before: FAILED at the first answer (a 4xx read as the wallet's refusal), though the wallet had debited 20.00.
      expect(settled.status).toBe('SUCCEEDED');
      expect((await ledgerPayment(settled.paymentId))?.executions).toBe(1);
      expect((await stack.admin.user(user.userId)).balance).toBe('80.00');
    },
  );

  it('an execute answered 5xx whose body says PAYMENT_ALREADY_EXECUTED is no proof: the outcome stays unknown, and the payment succeeds only once the wallet executed it', async () => {
    const { user, linkId } = await linkedUser('100.00');
    const since = new Date();
    // A gateway that templates its errors in the service's shape: nothing reached the wallet.
    await stack.admin.setFaults([
      {
        endpoint: 'op.payments.execute',
        mode: 'error-before-effect',
        status: 503,
        code: 'PAYMENT_ALREADY_EXECUTED',
        rate: 1,
      },
    ]);
    let id: string;
    try {
      id = (await postPayment({ linkId, amount: { currency: 'PHP', value: '30.00' } })).body.id;
      const deadline = Date.now() + 20_000;
      while (
        (await stack.database.walletCall.count({
          where: { operation: 'op.payments.execute', httpStatus: 503, startedAt: { gte: since } },
        })) < 1
      ) {
        if (Date.now() > deadline) throw new Error('the execute was never sent');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await stack.admin.clearFaults();
    }
    const payment = await waitFor(id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'], 60_000);
    // Before: SUCCEEDED at the 503, though the wallet had executed nothing (no debit).
    expect(payment.status).toBe('SUCCEEDED');
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('70.00');
  });

  it('an execute answered with another payment’s record is no answer: the outcome stays unknown, and the next execute’s 409 proves it executed once', async () => {
    const { user, linkId } = await linkedUser('100.00');
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'altered-answer', rate: 1 }]);
    try {
      const payment = await waitFor(
        (await postPayment({ linkId, amount: { currency: 'PHP', value: '9.00' } })).body.id,
        ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'],
        60_000,
      );
      expect(payment.status).toBe('SUCCEEDED');
      // Before: SUCCEEDED on the record of another payment, the first answer taken as this one's.
      expect(payment.events.at(-1)?.detail).toMatch(/PAYMENT_ALREADY_EXECUTED/);
      const mismatched = await stack.database.walletCall.count({
        where: { operation: 'op.payments.execute', errorCode: 'PAYMENT_MISMATCH' },
      });
      expect(mismatched).toBeGreaterThanOrEqual(1);
      expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
      expect((await stack.admin.user(user.userId)).balance).toBe('91.00');
    } finally {
      await stack.admin.clearFaults();
    }
  });

  it('an execute the wallet refused to take (429) is sent again without counting as unknown: SUCCEEDED, one debit', async () => {
    const { user, linkId } = await linkedUser('100.00');
    const since = new Date();
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'rate-limited', rate: 1 }]);
    let id: string;
    try {
      id = (await postPayment({ linkId, amount: { currency: 'PHP', value: '12.00' } })).body.id;
      // More 429s than an unknown outcome may have attempts (4): only then lift the fault.
      const deadline = Date.now() + 60_000;
      while (
        (await stack.database.walletCall.count({
          where: { operation: 'op.payments.execute', httpStatus: 429, startedAt: { gte: since } },
        })) < 5
      ) {
        if (Date.now() > deadline) throw new Error('the execute was not retried after 429');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect((await waitFor(id, ['EXECUTING', 'SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'])).status).toBe('EXECUTING');
    } finally {
      await stack.admin.clearFaults();
    }
    const payment = await waitFor(id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'], 90_000);
    expect(payment.status).toBe('SUCCEEDED');
    expect(payment.review).toBeNull();
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('88.00');
    // Each wait before sending again was the wallet's Retry-After (1 s), not the doubling backoff.
    const { workflowId } = await stack.database.payment.findUniqueOrThrow({
      where: { id },
      select: { workflowId: true },
    });
    const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
    const waits = (history.events ?? []).flatMap((event) =>
      event.timerStartedEventAttributes
        ? [Number(event.timerStartedEventAttributes.startToFireTimeout?.seconds ?? 0)]
        : [],
    );
    expect(waits.length).toBeGreaterThanOrEqual(5);
    expect(new Set(waits)).toEqual(new Set([1]));
  }, 120_000);

  /** Waits for `count` of the wallet's 401s on `operation` since `since`, then answers the payment's status. */
  async function refusedTimes(operation: string, count: number, since: Date, id: string): Promise<string> {
    const deadline = Date.now() + 60_000;
    while (
      (await stack.database.walletCall.count({ where: { operation, httpStatus: 401, startedAt: { gte: since } } })) <
      count
    ) {
      if (Date.now() > deadline) throw new Error(`${operation} was not refused ${count} times`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return (await waitFor(id, ['CREATING', 'EXECUTING', 'SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'])).status;
  }

  it('an execute refused for walletflow’s own client token, even one fetched anew, was not sent: it waits the refusal out and executes once', async () => {
    const { user, linkId } = await linkedUser('100.00');
    const since = new Date();
    await stack.admin.setFaults([
      {
        endpoint: 'op.payments.execute',
        mode: 'error-before-effect',
        rate: 1,
        status: 401,
        code: 'CLIENT_TOKEN_INVALID',
      },
    ]);
    let id: string;
    try {
      id = (await postPayment({ linkId, amount: { currency: 'PHP', value: '12.00' } })).body.id;
      // Two executes, each sent twice (the second with a renewed client token): before, the first ended it FAILED.
      expect(await refusedTimes('op.payments.execute', 4, since, id)).toBe('EXECUTING');
    } finally {
      await stack.admin.clearFaults();
    }
    const payment = await waitFor(id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'], 90_000);
    expect([payment.status, payment.error, payment.review]).toEqual(['SUCCEEDED', null, null]);
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('88.00');
  }, 120_000);

  it('a create whose client token the wallet’s token endpoint refuses (invalid_client) is no refusal of the payment: it is created once that is mended', async () => {
    const { user, linkId } = await linkedUser('100.00');
    const since = new Date();
    // The cached client token refused, and a new one refused at the token endpoint: the partner's credentials.
    await stack.admin.setFaults([
      {
        endpoint: 'op.payments.create',
        mode: 'error-before-effect',
        rate: 1,
        status: 401,
        code: 'CLIENT_TOKEN_INVALID',
      },
      { endpoint: 'connect.token', mode: 'error-before-effect', rate: 1, status: 401, code: 'invalid_client' },
    ]);
    let id: string;
    try {
      id = (await postPayment({ linkId, amount: { currency: 'PHP', value: '15.00' } })).body.id;
      // Before: FAILED invalid_client at the first refusal, nothing created.
      expect(await refusedTimes('connect.token.client_credentials', 2, since, id)).toBe('CREATING');
    } finally {
      await stack.admin.clearFaults();
    }
    const payment = await waitFor(id, ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'], 90_000);
    expect([payment.status, payment.error, payment.review]).toEqual(['SUCCEEDED', null, null]);
    expect((await ledgerPayment(payment.paymentId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('85.00');
  }, 120_000);

  it('an outcome that stays unknown goes to NEEDS_REVIEW after the retries, and can be resolved FAILED', async () => {
    const { user, linkId } = await linkedUser('100.00');
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1 }]);
    let parked: PaymentView;
    try {
      parked = await waitFor((await postPayment({ linkId, amount: { currency: 'PHP', value: '15.00' } })).body.id, [
        'SUCCEEDED',
        'FAILED',
        'NEEDS_REVIEW',
      ]);
    } finally {
      await stack.admin.clearFaults();
    }
    expect(parked.status).toBe('NEEDS_REVIEW');
    expect(parked.review?.attempts).toHaveLength(4);
    expect(parked.review?.attempts.every((attempt) => /^[0-9a-f-]{36}$/.test(attempt.requestReferenceNo ?? ''))).toBe(
      true,
    );
    expect(parked.review?.reason).toMatch(/stayed unknown/);
    expect(parked.review?.resolution).toBeNull();

    expect((await resolve(parked.id, { outcome: 'FAILED' })).status).toBe(400);
    const response = await resolve(
      parked.id,
      { outcome: 'FAILED', note: 'no debit in the wallet ledger' },
      'maria.ops',
    );
    expect(response.status).toBe(200);
    const resolved = (await response.json()) as PaymentView;
    expect(resolved).toMatchObject({ status: 'FAILED', error: { code: 'RESOLVED_FAILED' } });
    expect(resolved.review?.resolution).toMatchObject({
      outcome: 'FAILED',
      note: 'no debit in the wallet ledger',
      by: 'default (as maria.ops)',
    });
    expect(resolved.events.at(-1)?.status).toBe('FAILED');
    expect((await stack.admin.user(user.userId)).balance).toBe('100.00');
    const again = await resolve(parked.id, { outcome: 'SUCCEEDED', note: 'changed my mind' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 'PAYMENT_NOT_IN_REVIEW' });
  });

  it('follow the fundings’ idempotency rules', async () => {
    const { linkId } = await linkedUser('100.00');
    const key = `pay-${randomUUID()}`;
    const first = await postPayment({ linkId, amount: { currency: 'PHP', value: '1.00' } }, key);
    const same = await postPayment({ linkId, amount: { currency: 'PHP', value: '1.0' } }, key);
    const other = await postPayment({ linkId, amount: { currency: 'PHP', value: '2.00' } }, key);
    expect([first.status, same.status, other.status]).toEqual([202, 200, 422]);
    expect(same.body.id).toBe(first.body.id);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Whatever another body would be refused for before the store (before: CURRENCY_NOT_ACCEPTED, LINK_NOT_FOUND).
    for (const body of [
      { linkId, amount: { currency: 'USD', value: '1.00' } },
      { linkId, amount: { currency: 'GBP', value: '1.00' } },
      { linkId: randomUUID(), amount: { currency: 'PHP', value: '1.00' } },
    ]) {
      const answer = await postPayment(body, key);
      expect([answer.status, answer.body.code], JSON.stringify(body)).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    }
    const malformed = await postPayment({ linkId: 'x', amount: { currency: 'PHP', value: '1.00' } });
    expect(malformed.status).toBe(400);
    const unknownLink = await postPayment({ linkId: randomUUID(), amount: { currency: 'PHP', value: '1.00' } });
    expect(unknownLink.status).toBe(422);
    expect((await stack.opsFetch(`/ops/payments/${randomUUID()}`)).status).toBe(404);
    expect((await stack.opsFetch('/ops/payments?status=NEEDS_REVIEW')).status).toBe(200);
  });
});

describe('a payment whose record waits in review before its workflow does', () => {
  it('is not resolved now, and told so (503 WORKFLOW_UNAVAILABLE with Retry-After), never "not in review"', async () => {
    // Found by a read: after 20 refusals of the workflow's validator (about 5 s) a resolution was answered
    // not-waiting, which the routes answer 409 PAYMENT_NOT_IN_REVIEW ("only a payment in NEEDS_REVIEW can be
    // resolved") for a record that waited while its workflow had not reached the review yet (a backlog, a restarted
    // run) or while another resolution held it: read as "someone else resolved it". Its second read found the sweep's
    // 3 s deadline passing first: a time-out that "may have been taken", which stopped the sweep's resolutions.
    const { linkId } = await linkedUser('100.00');
    // Its run waits for the wallet's answer to its create: nowhere near a review, its validator refusing every resolve.
    await stack.admin.setFaults([{ endpoint: 'op.payments.create', mode: 'latency', rate: 1, delayMs: 45_000 }]);
    const posting = postPayment({ linkId, amount: { currency: 'PHP', value: '5.00' } }).catch(() => undefined);
    try {
      const payment = await waitUntil(
        () => stack.database.payment.findFirst({ where: { linkId }, orderBy: { createdAt: 'desc' } }),
        (row) => row?.status === 'CREATING',
        30_000,
      );
      let direct = 0;
      const record = {
        // The record waits for a resolution (as after its park committed, before its workflow took the answer).
        stillWaiting: async () => true,
        resolveWithoutWorkflow: async () => (direct += 1) > 0,
      };
      const resolution = [{ outcome: 'FAILED' as const, note: 'a test', resolvedBy: 'test' }] as [
        ResolvePaymentUpdateInput,
      ];
      for (const deadlineMs of [RESOLVE_DEADLINE_MS, 3_000])
        expect(
          await resolveReview(
            stack.temporal,
            payment!.workflowId,
            resolvePaymentUpdate,
            resolution,
            record,
            deadlineMs,
          ),
          `within ${deadlineMs} ms`,
        ).toEqual({
          kind: 'workflow-unavailable',
          refusal: { reason: 'not-ready', retryAfterSeconds: 5, mayHaveBeenTaken: false },
        });
      expect(direct).toBe(0);
      await stack.temporal.workflow
        .getHandle(payment!.workflowId)
        .terminate('test over')
        .catch(() => undefined);
    } finally {
      await stack.admin.clearFaults();
      await posting;
    }
  }, 90_000);
});
