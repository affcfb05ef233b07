// Money authority through the ops API (contract-decisions section 10), on real infrastructure:
// 100 concurrent withdrawals against a balance covering 10, a funding without `source` drawing on
// the treasury, limits refused with problem details naming the limit and what is left, accounts,
// idempotent adjustments, entries, finding a user's links, and the settlement of a day.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { defaultFundingLimits } from '../../ledger/limits.ts';
import { saveLinkWithTokens } from '../../links/link-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { runCli as runCliWith } from '../support/cli-run.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
beforeAll(async () => {
  // Limits high enough for the race (one user, 100 requests in a second), low enough to test.
  stack = await startPartnerStack({
    fundingLimits: {
      ...defaultFundingLimits,
      min: 1_000n,
      max: 5_000_000n,
      userDailyAmount: 2_000_000n,
      userDailyCount: 1000,
      userPerMinute: 1000,
    },
  });
  await stack.startWorker();
});
afterAll(() => stack.close());

const amount = (value: string) => ({ currency: 'PHP', value });

async function post(path: string, body: unknown, key: string = randomUUID()) {
  const response = await stack.opsFetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Record<string, unknown> & { code?: string; detail?: string };
  return {
    status: response.status,
    body: answer,
    // A 503 a partner may send again: OVERLOADED with a Retry-After header, nothing stored.
    retryable: response.status === 503 && response.headers.get('retry-after') ? answer.code : undefined,
  };
}
const get = async (path: string) => {
  const response = await stack.opsFetch(path);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

async function linkedUser() {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const issued = await stack.admin.embeddedTokens(user.userId);
  const partnerUserId = `wallet:${user.profileId}`;
  const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
    partnerUserId,
    profileId: user.profileId,
    maskedUserId: null,
    kind: 'EMBEDDED',
    scopes: ['openid'],
    requestReferenceNo: null,
    tokens: {
      accessToken: issued.accessToken,
      refreshToken: issued.refreshToken,
      accessTokenExpiresAt: new Date(issued.expiresAt * 1000),
      refreshTokenExpiresAt: null,
    },
  });
  return { user, linkId, partnerUserId };
}

async function waitFinal(fundingId: string): Promise<FundingView> {
  for (let i = 0; i < 400; i += 1) {
    const funding = (await get(`/ops/fundings/${fundingId}`)).body as unknown as FundingView;
    if (['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'].includes(funding.status)) return funding;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  throw new Error(`funding ${fundingId} not final`);
}

describe('withdrawals through the ops API', () => {
  it('100 concurrent withdrawals against a balance covering exactly 10: 10 accepted, 90 INSUFFICIENT_FUNDS, never negative', async () => {
    const { linkId, partnerUserId } = await linkedUser();
    expect(
      (
        await post(`/ops/accounts/${encodeURIComponent(partnerUserId)}/adjustments`, {
          amount: amount('100.00'),
          reason: 'winnings',
        })
      ).status,
    ).toBe(201);
    const body = {
      recipient: { type: 'TOKEN', linkId },
      amount: amount('10.00'),
      source: { type: 'USER_BALANCE', partnerUserId },
    };
    // Every first answer is specified: 202, 422, or (the burst met a busy database) 503 OVERLOADED with
    // Retry-After, which a partner sends again with the same key until it is answered 202 or 422.
    const keys = Array.from({ length: 100 }, () => randomUUID());
    const first = await Promise.all(keys.map((key) => post('/ops/fundings', body, key)));
    for (const answer of first)
      expect(answer.status === 503 ? answer.retryable : answer.status).toSatisfy(
        (seen: unknown) => seen === 202 || seen === 422 || seen === 'OVERLOADED',
      );
    const answers = first.slice();
    for (let round = 0; answers.some((answer) => answer.status === 503); round += 1) {
      expect(round).toBeLessThan(20);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await Promise.all(
        answers.map(async (answer, i) => {
          if (answer.status === 503) answers[i] = await post('/ops/fundings', body, keys[i]);
        }),
      );
    }
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(10);
    const refused = answers.filter((answer) => answer.status === 422);
    expect(refused).toHaveLength(90);
    expect(refused.every((answer) => answer.body.code === 'INSUFFICIENT_FUNDS')).toBe(true);
    expect(refused[0]?.body.detail).toContain('available');
    expect(await stack.database.funding.count({ where: { sourcePartnerUserId: partnerUserId } })).toBe(10);
    const view = (await get(`/ops/accounts/${encodeURIComponent(partnerUserId)}`)).body;
    expect(Number((view.available as { value: string }).value)).toBeGreaterThanOrEqual(0);
    // The ten run to APPROVED: each hold posted once, the balance spent, never below zero.
    for (const answer of answers.filter((a) => a.status === 202))
      expect((await waitFinal(answer.body.fundingId as string)).status).toBe('APPROVED');
    expect((await get(`/ops/accounts/${encodeURIComponent(partnerUserId)}`)).body).toEqual({
      account: `USER:${partnerUserId}`,
      balance: amount('0.00'),
      held: amount('0.00'),
      available: amount('0.00'),
    });
  });

  it('a funding without source draws on the treasury (no limit outside production) and shows its source', async () => {
    const { linkId } = await linkedUser();
    const started = await post('/ops/fundings', { recipient: { type: 'TOKEN', linkId }, amount: amount('12.00') });
    expect(started.status).toBe(202);
    expect(started.body.source).toEqual({ type: 'TREASURY' });
    expect((await waitFinal(started.body.fundingId as string)).status).toBe('APPROVED');
    const treasury = (await get('/ops/accounts/TREASURY')).body;
    // A query that is not the view's is refused naming it, not as if TREASURY were no account (before:
    // INVALID_ACCOUNT).
    for (const query of ['currency=php', 'currency=GBP', 'limit=5']) {
      const refused = await get(`/ops/accounts/TREASURY?${query}`);
      expect([refused.status, refused.body], query).toEqual([
        400,
        expect.objectContaining({ code: 'VALIDATION_ERROR', detail: expect.stringContaining(query.split('=')[0]!) }),
      ]);
    }
    expect(treasury.account).toBe('TREASURY');
  });

  it('limits refuse before anything is stored, naming the limit and what is left', async () => {
    const { linkId, partnerUserId } = await linkedUser();
    await post(`/ops/accounts/${encodeURIComponent(partnerUserId)}/adjustments`, {
      amount: amount('5000.00'),
      reason: 'cashback',
    });
    const body = (value: string) => ({
      recipient: { type: 'TOKEN', linkId },
      amount: amount(value),
      source: { type: 'USER_BALANCE', partnerUserId },
    });
    const small = await post('/ops/fundings', body('0.50'));
    expect(small).toMatchObject({
      status: 422,
      body: { code: 'AMOUNT_TOO_SMALL', detail: expect.stringContaining('FUNDING_MIN') },
    });
    const large = await post('/ops/fundings', body('5000.01'));
    expect(large).toMatchObject({ status: 422, body: { code: 'AMOUNT_TOO_LARGE' } });
    expect((await post('/ops/fundings', body('1500.00'))).status).toBe(202);
    const daily = await post('/ops/fundings', body('600.00'));
    expect(daily).toMatchObject({
      status: 422,
      body: { code: 'DAILY_LIMIT_EXCEEDED', detail: expect.stringContaining('500.00 PHP left today') },
    });
    expect(await stack.database.funding.count({ where: { sourcePartnerUserId: partnerUserId } })).toBe(1);
  });
});

describe('accounts, adjustments, entries, links, settlement', () => {
  it('adjustments are idempotent by key; another body is refused; a debit below available is refused', async () => {
    const partnerUserId = `partner-${randomUUID()}`;
    const key = randomUUID();
    const first = await post(
      `/ops/accounts/${partnerUserId}/adjustments`,
      { amount: amount('25.00'), reason: 'goodwill' },
      key,
    );
    expect(first).toMatchObject({
      status: 201,
      body: {
        account: `USER:${partnerUserId}`,
        counterAccount: 'TREASURY',
        amount: amount('25.00'),
        reason: 'goodwill',
      },
    });
    const again = await post(
      `/ops/accounts/${partnerUserId}/adjustments`,
      { amount: amount('25.00'), reason: 'goodwill' },
      key,
    );
    expect(again).toMatchObject({ status: 200, body: { adjustmentId: first.body.adjustmentId } });
    expect(
      (await post(`/ops/accounts/${partnerUserId}/adjustments`, { amount: amount('26.00'), reason: 'goodwill' }, key))
        .body.code,
    ).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(
      (await post(`/ops/accounts/${partnerUserId}/adjustments`, { amount: amount('-25.01'), reason: 'clawback' })).body,
    ).toMatchObject({ code: 'INSUFFICIENT_FUNDS', detail: expect.stringContaining('25.00 PHP available') });
    expect((await get(`/ops/accounts/${partnerUserId}`)).body).toMatchObject({
      balance: amount('25.00'),
      available: amount('25.00'),
    });
    const entries = await get(`/ops/ledger/entries?account=${encodeURIComponent(`USER:${partnerUserId}`)}&limit=5`);
    expect(entries.body.items).toEqual([
      expect.objectContaining({
        account: `USER:${partnerUserId}`,
        amount: amount('25.00'),
        reference: `adjustment:${key}`,
        pending: false,
      }),
    ]);
    expect((await get('/ops/ledger/entries?cursor=not-a-cursor')).status).toBe(400);
    // An entry id past PostgreSQL's bigint is no cursor of ours (it was a 500); its largest is one.
    const idCursor = (id: string) => Buffer.from(id).toString('base64url');
    for (const id of ['9223372036854775808', '9999999999999999999']) {
      const answer = await get(`/ops/ledger/entries?cursor=${idCursor(id)}`);
      expect({ id, status: answer.status, code: answer.body.code }).toEqual({
        id,
        status: 400,
        code: 'VALIDATION_ERROR',
      });
    }
    expect((await get(`/ops/ledger/entries?cursor=${idCursor('9223372036854775807')}&limit=1`)).status).toBe(200);
  });

  it('takes no ledger account’s name as a partner user id: a login binds none, a batch is paid from none', async () => {
    // Found by a read: /ops/accounts/{account} reads TREASURY or CAPITAL as the system account, so a user by that id
    // had money that could be neither read nor adjusted there, and an adjustment meant for them moved the treasury's.
    const before = await stack.database.loginState.count();
    for (const partnerUserId of ['TREASURY', 'CAPITAL', 'IN_FLIGHT']) {
      const minted = await post('/ops/links/login-urls', { partnerUserId, mobile: '+639171234567' });
      expect({ partnerUserId, status: minted.status, code: minted.body.code }).toEqual({
        partnerUserId,
        status: 400,
        code: 'VALIDATION_ERROR',
      });
      const batch = await post('/ops/funding-batches', {
        name: 'from a ledger account',
        source: { type: 'USER_BALANCE', partnerUserId },
        items: [{ reference: 'r-1', recipient: { type: 'CODE', code: '1234567' }, amount: amount('1.00') }],
      });
      expect({ partnerUserId, status: batch.status }).toEqual({ partnerUserId, status: 422 });
      expect(JSON.stringify(batch.body)).toContain('ledger account');
    }
    expect(await stack.database.loginState.count()).toBe(before);
    // A partner user id that only looks like one is theirs as before.
    expect((await post('/ops/links/login-urls', { partnerUserId: 'treasury', mobile: '+639171234567' })).status).toBe(
      201,
    );
  });

  it('finds a user’s links by partner user id or wallet profile id', async () => {
    const { user, linkId, partnerUserId } = await linkedUser();
    expect((await get(`/ops/links?partnerUserId=${encodeURIComponent(partnerUserId)}`)).body.items).toEqual([
      expect.objectContaining({ linkId }),
    ]);
    expect((await get(`/ops/links?profileId=${user.profileId}`)).body.items).toEqual([
      expect.objectContaining({ linkId, partnerUserId }),
    ]);
    expect((await get('/ops/links')).status).toBe(400);
  });

  it('reports a day’s settlement: approved fundings and succeeded payments against the wallet and the ledger, JSON and CSV', async () => {
    const { linkId } = await linkedUser();
    const started = await post('/ops/fundings', { recipient: { type: 'TOKEN', linkId }, amount: amount('7.00') });
    await waitFinal(started.body.fundingId as string);
    // Today's report, the day so far, covers what was approved before its run began (a quarter second before, at
    // least): the funding just approved is in it, as a partner checking the day in the afternoon expects (before: only
    // what was approved SETTLEMENT_GRACE_MS before the run began, so this funding was in no report of today for two
    // minutes).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const approved = await stack.database.fundingEvent.findFirstOrThrow({
      where: { fundingId: started.body.fundingId as string, status: 'APPROVED' },
    });
    const date = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Manila' }).format(approved.at);
    // The first GET of a day settles it and later ones serve that stored report (contract 10), so
    // another file's GET of today, earlier, answers without this funding: a fresh run counts it.
    const fresh = await waitUntil(
      () => post(`/ops/settlements/${date}/runs`, {}),
      (answer) => answer.status !== 409,
      60_000,
      250,
    );
    expect(fresh).toMatchObject({ status: 202, body: { date, state: 'RUNNING', runId: expect.any(String) } });
    const settlement = await waitUntil(
      () => get(`/ops/settlements/${date}`),
      (answer) => answer.status !== 202 && answer.body.runId === fresh.body.runId,
      60_000,
      250,
    );
    expect(settlement.status).toBe(200);
    // The day may hold more than a page of other files' items: the funding's line is on one of its pages.
    const lineOf = (page: typeof settlement) =>
      (page.body.items as Array<Record<string, unknown>>).find((entry) => entry.id === started.body.fundingId);
    let page = settlement;
    let item = lineOf(page);
    while (item === undefined && page.body.nextCursor !== null) {
      page = await get(`/ops/settlements/${date}?cursor=${encodeURIComponent(page.body.nextCursor as string)}`);
      expect(page.status).toBe(200);
      item = lineOf(page);
    }
    expect(item).toMatchObject({
      kind: 'funding',
      result: 'matched',
      walletStatus: 'APPROVED',
      ledgerAmount: amount('7.00'),
    });
    expect(settlement.body.fundings).toMatchObject({
      matched: expect.any(Number),
      missing: expect.any(Number),
      mismatched: expect.any(Number),
    });
    const csv = await stack.opsFetch(`/ops/settlements/${date}?format=csv`);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect(await csv.text()).toContain(`"${started.body.fundingId as string}"`);
    expect((await get('/ops/settlements/2026-13-40')).status).toBe(400);
  });

  it('walletflow accounts adjust|get, ledger and settlement-report through the ops API', async () => {
    const target = ['--api', stack.apiBase];
    const runCli = (args: string[]) => runCliWith(args, { env: { WALLETFLOW_OPS_KEY: stack.opsKey } });
    const partnerUserId = `cli-${randomUUID()}`;
    const adjusted = await runCli([
      'accounts',
      'adjust',
      partnerUserId,
      '--amount',
      '40.00',
      '--reason',
      'earnings',
      '--idempotency-key',
      `cli-${partnerUserId}`,
      ...target,
    ]);
    expect(adjusted).toMatchObject({ code: 0, stdout: expect.stringContaining('40.00 PHP') });
    const again = await runCli([
      'accounts',
      'adjust',
      partnerUserId,
      '--amount',
      '40.00',
      '--reason',
      'earnings',
      '--idempotency-key',
      `cli-${partnerUserId}`,
      ...target,
    ]);
    expect(again.stdout).toContain('already made with this key');
    const view = await runCli(['accounts', 'get', partnerUserId, '--output', 'json', ...target]);
    expect(JSON.parse(view.stdout)).toMatchObject({ account: `USER:${partnerUserId}`, available: amount('40.00') });
    const entries = await runCli(['ledger', '--account', `USER:${partnerUserId}`, ...target]);
    expect(entries.stdout).toContain(`adjustment:cli-${partnerUserId}`);
    const refused = await runCli([
      'accounts',
      'adjust',
      partnerUserId,
      '--amount',
      '-40.01',
      '--reason',
      'clawback',
      ...target,
    ]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('INSUFFICIENT_FUNDS');
    const report = await runCli(['settlement-report', '--date', '2020-01-01', ...target]);
    expect(report).toMatchObject({ code: 0, stdout: expect.stringContaining('settlement of 2020-01-01') });
  });

  it('keeps every ledger invariant', async () => {
    expect((await checkLedgerInvariants(stack.database)).violations).toEqual([]);
  });
});
