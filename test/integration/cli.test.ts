// The `walletflow` commands as a user runs them: the real CLI in a child process against the real
// API, Temporal worker, PostgreSQL and sandbox (the key from WALLETFLOW_OPS_KEY, never a flag):
// fund, pay and status, every ops route with --output json, usage errors (64), --version. Plus the
// terminal renderer fed with fundings directly.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { fundingSchema, type FundingView } from '../../domain/funding.ts';
import { paymentSchema } from '../../domain/payment.ts';
import { createFundingProgress } from '../../cli/progress.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { runCli as runCliWith } from '../support/cli-run.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

describe('walletflow fund and status against a running stack', () => {
  let stack: PartnerStack;
  const target = () => ['--api', stack.apiBase];
  /** The CLI with the stack's key in WALLETFLOW_OPS_KEY (or `env`'s settings instead). */
  const runCli = (args: string[], env: NodeJS.ProcessEnv = { WALLETFLOW_OPS_KEY: stack.opsKey }) =>
    runCliWith(args, { env });
  const fundingIdIn = (stdout: string) => /funding ([0-9a-f-]{36})/.exec(stdout)?.[1] ?? '';

  beforeAll(async () => {
    stack = await startPartnerStack();
    await stack.startWorker();
  });
  afterAll(async () => {
    await stack.close();
  });

  async function codeFor(kycLevel: 'KYC0' | 'KYC1') {
    const user = await stack.admin.createUser({ kycLevel, balance: '100.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    return { user, code };
  }

  it('reads the cash-in code from standard input with --code alone, so it is in neither the shell history nor ps', async () => {
    const { code } = await codeFor('KYC1');
    const result = await runCliWith(['fund', '--code', '--amount', '3.00', ...target()], {
      env: { WALLETFLOW_OPS_KEY: stack.opsKey },
      input: `${code}\n`,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`*****${code.slice(-2)}`);
    expect(result.stdout + result.stderr).not.toContain(code);
    expect(result.stderr).not.toContain('shell history');
  });

  it('funds by cash-in code: plain timeline lines, exit 0, the code never printed whole', async () => {
    const { user, code } = await codeFor('KYC1');
    const result = await runCli(['fund', '--code', code, '--amount', '100.50', ...target()]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']) {
      expect(
        lines.some((line) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+${status}\\b`).test(line)),
        status,
      ).toBe(true);
    }
    expect(result.stdout).toMatch(/EXECUTING\s+transfer \S+ created; executing\s+\(ref [0-9a-f-]{36}\)/);
    expect(result.stdout).toMatch(/idempotency key [0-9a-f-]{36}/);
    expect(result.stdout).toContain(`*****${code.slice(-2)}`);
    expect(result.stdout).not.toContain('\x1b[');
    const summary = lines.filter((line) => line !== '').at(-1) ?? '';
    expect(summary).toMatch(/^funding [0-9a-f-]{36}\s+APPROVED\s+transfer \S+$/);
    expect(result.stdout + result.stderr).not.toContain(code);
    expect(result.stdout + result.stderr).not.toContain(stack.opsKey);
    expect((await stack.admin.user(user.userId)).balance).toBe('200.50');
  });

  it('a KYC0 wallet: REJECTED with M133 and the upgrade guidance, exit 1', async () => {
    const { code } = await codeFor('KYC0');
    const result = await runCli(['fund', '--code', code, '--amount', '5', ...target()]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/REJECTED/);
    expect(result.stdout).toMatch(/error M133: .*upgrade/i);
    expect(result.stdout + result.stderr).not.toContain(code);
  });

  it('funds a linked wallet by --link, exit 0', async () => {
    const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
    const result = await runCli(['fund', '--link', linkId, '--amount', '25.00', ...target()]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`link ${linkId}`);
    expect(result.stdout).toMatch(/APPROVED/);
    expect((await stack.admin.user(user.userId)).balance).toBe('25.00');
  });

  it('refuses bad input with exit 64 before calling the API', async () => {
    const key = `cli-bad-${randomUUID()}`;
    const result = await runCli([
      'fund',
      '--code',
      '1234567',
      '--amount',
      '1.005',
      '--idempotency-key',
      key,
      ...target(),
    ]);
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(/--amount: .*decimals/);
    expect(result.stdout).toBe('');
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(0);

    const both = await runCli(['fund', '--code', '1234567', '--link', randomUUID(), '--amount', '1', ...target()]);
    expect(both.code).toBe(64);
    expect(both.stderr).toMatch(/exactly one/);
    expect(both.stdout + both.stderr).not.toContain('1234567');
  });

  it('a wrong ops key: exit 3 with the 401 problem', async () => {
    const result = await runCli(['fund', '--code', '1234567', '--amount', '1.00', '--api', stack.apiBase], {
      WALLETFLOW_OPS_KEY: 'not-the-key',
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/401 UNAUTHORIZED: the ops API key is not valid/);
    expect(result.stdout + result.stderr).not.toContain('not-the-key');
  });

  it('an API that is not running: exit 3, says where it looked', async () => {
    const { findFreePort } = await import('../../stack/ports.ts');
    const api = `http://127.0.0.1:${await findFreePort()}`;
    const result = await runCli(['status', randomUUID(), '--api', api], { WALLETFLOW_OPS_KEY: 'anything' });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`not reachable at ${api}`);
    expect(result.stderr).toContain('npm run dev');
  });

  it('--no-wait returns once accepted; status prints the timeline; --json is a funding', async () => {
    const { code } = await codeFor('KYC1');
    const started = await runCli(['fund', '--code', code, '--amount', '3.00', '--no-wait', ...target()]);
    expect(started.code, started.stderr).toBe(0);
    const fundingId = fundingIdIn(started.stdout);
    expect(fundingId).not.toBe('');
    expect(started.stdout).toContain(`walletflow status ${fundingId}`);

    // Wait until the workflow is done, then read it back through the CLI.
    const deadline = Date.now() + 60_000;
    let json: FundingView | undefined;
    while (Date.now() < deadline) {
      const answer = await runCli(['status', fundingId, '--json', ...target()]);
      expect(answer.code, answer.stderr).toBe(0);
      json = fundingSchema.parse(JSON.parse(answer.stdout));
      if (json.status === 'APPROVED') break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(json?.status).toBe('APPROVED');
    expect(json?.recipient).toEqual({ type: 'CODE', masked: `*****${code.slice(-2)}` });

    const shown = await runCli(['status', fundingId, ...target()]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status\s+APPROVED$/m);
    expect(shown.stdout).toMatch(/^amount\s+3\.00 PHP$/m);
    expect(shown.stdout).toMatch(/TIME\s+STATUS\s+REQUEST-REFERENCE-NO\s+DETAIL/);
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'APPROVED'])
      expect(shown.stdout).toMatch(new RegExp(`Z\\s+${status}\\s`));
    expect(shown.stdout).toContain(json?.events.at(-1)?.requestReferenceNo ?? 'missing');
    expect(shown.stdout + started.stdout).not.toContain(code);
  });

  it('not final within --timeout: exit 2, the funding goes on; the printed key resumes it', async () => {
    const { code } = await codeFor('KYC1');
    await stack.stopWorker();
    let first;
    try {
      first = await runCli(['fund', '--code', code, '--amount', '2.00', '--timeout', '1', ...target()]);
    } finally {
      await stack.startWorker();
    }
    expect(first.code, first.stderr).toBe(2);
    const fundingId = fundingIdIn(first.stdout);
    expect(first.stderr).toContain(
      `still PENDING after 1 s; the funding goes on. Check it with: walletflow status ${fundingId}`,
    );
    const key = /idempotency key (\S+)/.exec(first.stdout)?.[1] ?? '';

    const retried = await runCli(['fund', '--code', code, '--amount', '2.00', '--idempotency-key', key, ...target()]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`used before with the same request: funding ${fundingId}`);
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(1);
  });

  it('status of an unknown funding: exit 1', async () => {
    const id = randomUUID();
    const result = await runCli(['status', id, ...target()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no funding ${id}`);
  });

  async function linkedUser(balance: string) {
    return createEmbeddedLink(stack, { kycLevel: 'KYC1', balance });
  }

  it('pay: a merchant payment from a linked wallet, one line per step, exit 0; too little balance exits 1', async () => {
    const { user, linkId } = await linkedUser('50.00');
    const paid = await runCli(['pay', '--link', linkId, '--amount', '20.00', ...target()]);
    expect(paid.code, paid.stderr).toBe(0);
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'SUCCEEDED']) {
      expect(paid.stdout, status).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+${status}\\b`, 'm'));
    }
    expect(paid.stdout).toMatch(/^payment [0-9a-f-]{36}\s+SUCCEEDED\s+wallet payment \S+/m);
    expect(Number((await stack.admin.user(user.userId)).balance)).toBeLessThanOrEqual(30);
    expect(paid.stdout + paid.stderr).not.toContain(stack.opsKey);

    const refused = await runCli(['pay', '--link', linkId, '--amount', '500.00', ...target()]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toMatch(/FAILED.*error INSUFFICIENT_BALANCE/);

    const bad = await runCli(['pay', '--link', 'not-a-link', '--amount', '-1', ...target()]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--link: .*UUID/);
    expect(await stack.database.payment.count({ where: { linkId } })).toBe(2);
  });

  it('the key comes from WALLETFLOW_OPS_KEY_FILE; --key is refused (exit 64) without echoing it', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'wf-key-')), 'ops-key');
    writeFileSync(file, `${stack.opsKey}\n`, { mode: 0o600 });
    const fromFile = await runCli(['fundings', 'list', '--limit', '1', '--output', 'json', ...target()], {
      WALLETFLOW_OPS_KEY_FILE: file,
    });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toHaveProperty('items');

    const flagged = await runCli(['fundings', 'list', '--key', 'typed-secret-value', ...target()]);
    expect(flagged.code).toBe(64);
    expect(flagged.stderr).toMatch(/walletflow fundings list: --key is no longer accepted.*WALLETFLOW_OPS_KEY_FILE/);
    expect(flagged.stdout + flagged.stderr).not.toContain('typed-secret-value');

    const none = await runCli(['fundings', 'list', ...target()], { WALLETFLOW_STATE_DIR: path.dirname(file) });
    expect(none.code).toBe(78);
    expect(none.stderr).toMatch(/no ops API key: set WALLETFLOW_OPS_KEY or WALLETFLOW_OPS_KEY_FILE/);
  });

  it('usage errors exit 64 before any request; --version prints the version', async () => {
    for (const args of [
      ['no-such-command'],
      ['fundings', 'list', '--status', 'NOT_A_STATUS'],
      ['fundings', 'list', '--limit', '0'],
      ['fundings', 'list', '--from', 'yesterday'],
      ['fundings', 'resolve', randomUUID(), '--outcome', 'APPROVED'],
      ['payments', 'resolve', randomUUID(), '--outcome', 'MAYBE', '--note', 'x'],
      ['links', 'find'],
      ['links', 'get'],
      ['fundings', 'get', randomUUID(), '--output', 'yaml'],
      [],
    ]) {
      const result = await runCli([...args, ...target()]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(64);
      expect(result.stdout).toBe('');
    }
    const version = await runCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it('drives every ops route of the OpenAPI document through the CLI with --output json', async () => {
    const covered = new Set<string>();
    const json = async (operationId: string, args: string[], exitCode = 0) => {
      const result = await runCli([...args, '--output', 'json', ...target()]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(exitCode);
      expect(result.stdout + result.stderr).not.toContain(stack.opsKey);
      covered.add(operationId);
      return JSON.parse(result.stdout) as Record<string, unknown> & { items: Array<Record<string, unknown>> };
    };

    const partnerUserId = `cli-ops-${randomUUID()}`;
    const { linkId } = await createEmbeddedLink(
      stack,
      { kycLevel: 'KYC1', balance: '100.00' },
      { partnerUserId: () => partnerUserId },
    );
    expect(
      await json('createLoginUrl', ['links', 'login-url', `cli-login-${randomUUID()}`, '--mobile', '09171234567']),
    ).toMatchObject({ url: expect.stringMatching(/^http/) });
    expect(await json('getLink', ['links', 'get', linkId])).toMatchObject({ linkId, status: 'ACTIVE', partnerUserId });
    expect(
      (await json('findLinks', ['links', 'find', '--partner-user-id', partnerUserId])).items.map((link) => link.linkId),
    ).toEqual([linkId]);
    expect(await json('getLinkProfile', ['links', 'profile', linkId])).toMatchObject({ linkId });

    const funded = fundingSchema.parse(await json('createFunding', ['fund', '--link', linkId, '--amount', '5.00']));
    expect(funded.status).toBe('APPROVED');
    expect(await json('getFunding', ['fundings', 'get', funded.fundingId])).toMatchObject({
      fundingId: funded.fundingId,
      status: 'APPROVED',
    });
    const fundingPage = await json('listFundings', ['fundings', 'list', '--status', 'APPROVED', '--limit', '200']);
    expect(fundingPage.items.some((item) => item.fundingId === funded.fundingId)).toBe(true);

    const pending = await plantFunding('PENDING');
    expect(await json('cancelFunding', ['fundings', 'cancel', pending])).toMatchObject({
      fundingId: pending,
      status: 'FAILED',
      error: { code: 'CANCELLED' },
    });
    const inReview = await plantFunding('NEEDS_REVIEW');
    const resolvedFunding = await json('resolveFunding', [
      'fundings',
      'resolve',
      inReview,
      '--outcome',
      'FAILED',
      '--note',
      'operator confirms nothing executed',
      '--actor',
      'cli.test',
    ]);
    expect(resolvedFunding).toMatchObject({
      status: 'FAILED',
      review: { resolution: { outcome: 'FAILED', by: expect.stringContaining('cli.test') } },
    });

    const paid = paymentSchema.parse(await json('createPayment', ['pay', '--link', linkId, '--amount', '2.00']));
    expect(paid.status).toBe('SUCCEEDED');
    expect(await json('getPayment', ['payments', 'get', paid.id])).toMatchObject({ id: paid.id, status: 'SUCCEEDED' });
    expect(
      (await json('listPayments', ['payments', 'list', '--status', 'SUCCEEDED', '--limit', '200'])).items.some(
        (item) => item.id === paid.id,
      ),
    ).toBe(true);
    const parked = await plantPayment(linkId);
    expect(
      await json('resolvePayment', [
        'payments',
        'resolve',
        parked,
        '--outcome',
        'FAILED',
        '--note',
        'operator shows no debit',
      ]),
    ).toMatchObject({ id: parked, status: 'FAILED' });

    const adjusted = await json('adjustAccount', [
      'accounts',
      'adjust',
      partnerUserId,
      '--amount',
      '10.00',
      '--reason',
      'cli test',
    ]);
    expect(adjusted).toMatchObject({ account: `USER:${partnerUserId}`, amount: { value: '10.00' } });
    expect(await json('getAccount', ['accounts', 'get', partnerUserId])).toMatchObject({
      account: `USER:${partnerUserId}`,
      balance: { value: '10.00' },
    });
    expect((await json('listLedgerEntries', ['ledger', '--account', `USER:${partnerUserId}`])).items).toHaveLength(1);
    const settled = await json('getSettlement', ['settlement-report', '--date', '2020-01-01']);
    expect(settled).toMatchObject({ date: '2020-01-01', complete: true, items: [], nextCursor: null });
    const again = await json('startSettlementRun', ['settlement-report', '--date', '2020-01-01', '--fresh']);
    expect(again).toMatchObject({ date: '2020-01-01', items: [] });
    expect(again.runId).not.toBe(settled.runId);

    expect(await json('unlink', ['links', 'unlink', linkId])).toMatchObject({ linkId, status: 'UNLINKED' });

    const endpoint = await json('createWebhookEndpoint', [
      'webhooks',
      'endpoints',
      'create',
      'http://127.0.0.1:9/hooks',
      '--events',
      'funding.approved,payment.succeeded',
    ]);
    expect(endpoint).toMatchObject({ url: 'http://127.0.0.1:9/hooks', secret: expect.stringMatching(/^whsec_/) });
    const endpointId = String(endpoint.id);
    expect(await json('getWebhookEndpoint', ['webhooks', 'endpoints', 'get', endpointId])).not.toHaveProperty('secret');
    expect(
      (await json('listWebhookDeliveries', ['webhooks', 'deliveries', '--endpoint-id', endpointId])).items,
    ).toBeInstanceOf(Array);
    const redeliver = await runCli(['webhooks', 'redeliver', randomUUID(), '--output', 'json', ...target()]);
    expect(redeliver.code).toBe(3);
    covered.add('redeliverWebhook');
    expect(await json('deleteWebhookEndpoint', ['webhooks', 'endpoints', 'delete', endpointId])).toMatchObject({
      id: endpointId,
      deleted: true,
    });

    // Funding batches: a CSV file in, followed to COMPLETED, read back; a bad file is a report, exit 1.
    const batchCodes = await Promise.all([0, 1, 2].map(async () => (await codeFor('KYC1')).code));
    const folder = mkdtempSync(path.join(tmpdir(), 'walletflow-cli-batch-'));
    const csvFile = path.join(folder, 'payouts.csv');
    writeFileSync(
      csvFile,
      `reference,recipient_type,recipient,amount\n${batchCodes.map((code, index) => `row-${index},CODE,${code},1.00`).join('\n')}\n`,
    );
    const batch = await json('createFundingBatch', ['batches', 'create', '--file', csvFile, '--name', 'cli payouts']);
    expect(batch).toMatchObject({ name: 'cli payouts', total: { count: 3, amount: { value: '3.00' } } });
    const batchId = String(batch.batchId);
    const watched = await runCli(['batches', 'watch', batchId, '--interval', '0.5', ...target()]);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toMatch(/\[#{24}\] 3\/3 .*COMPLETED {2}APPROVED 3/);
    covered.add('getFundingBatch');
    expect(await json('getFundingBatch', ['batches', 'get', batchId])).toMatchObject({
      state: 'COMPLETED',
      counts: { APPROVED: 3 },
    });
    expect(
      (await json('listFundingBatches', ['batches', 'list', '--limit', '200'])).items.some(
        (item) => item.batchId === batchId,
      ),
    ).toBe(true);
    expect(
      (await json('listFundingBatchItems', ['batches', 'items', batchId])).items.map((item) => [
        item.reference,
        item.status,
      ]),
    ).toEqual([
      ['row-0', 'APPROVED'],
      ['row-1', 'APPROVED'],
      ['row-2', 'APPROVED'],
    ]);
    const report = await runCli(['batches', 'report', batchId, ...target()]);
    expect(report.stdout.split('\r\n').filter(Boolean)).toHaveLength(4);
    covered.add('getFundingBatchReport');
    // A finished batch moves no further: each move is refused with its problem (exit 3).
    for (const [move, operationId] of [
      ['approve', 'approveFundingBatch'],
      ['reject', 'rejectFundingBatch'],
      ['pause', 'pauseFundingBatch'],
      ['resume', 'resumeFundingBatch'],
      ['cancel', 'cancelFundingBatch'],
    ] as const) {
      const refused = await runCli(['batches', move, batchId, ...target()]);
      expect(refused.code, move).toBe(3);
      expect(refused.stderr, move).toMatch(/BATCH_STATE|SAME_APPROVER/);
      covered.add(operationId);
    }
    writeFileSync(csvFile, 'reference,recipient_type,recipient,amount\nok,CODE,1234567,1.00\nok,CODE,123,1.005\n');
    const invalid = await runCli(['batches', 'create', '--file', csvFile, ...target()]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/problems? in the file; nothing was stored/);
    expect(invalid.stderr).toMatch(/2\s+ok\s+recipient\.code\s+INVALID/);
    expect(invalid.stderr).toMatch(/2\s+ok\s+amount\.value\s+INVALID/);

    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { operationId: string }>> };
    const opsOperations = Object.entries(document.paths)
      .filter(([route]) => route.startsWith('/ops/'))
      .flatMap(([, item]) => Object.values(item).map((operation) => operation.operationId));
    expect([...covered].sort()).toEqual(opsOperations.sort());
    // A CLI process per route (about 60 of them): a minute on a quiet machine, more beside the suite.
  }, 240_000);

  it('an unknown id: get exits 1; a refused resolve exits 3 with the problem code', async () => {
    const unknown = await runCli(['payments', 'get', randomUUID(), ...target()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no payment/);
    const refused = await runCli([
      'fundings',
      'resolve',
      randomUUID(),
      '--outcome',
      'APPROVED',
      '--note',
      'x',
      ...target(),
    ]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/404 FUNDING_NOT_FOUND/);
  });

  /** A funding row as a crashed or parked run leaves it (no workflow waits for it). */
  async function plantFunding(status: 'PENDING' | 'NEEDS_REVIEW'): Promise<string> {
    const id = randomUUID();
    await stack.database.funding.create({
      data: {
        id,
        idempotencyKey: `cli-plant-${id}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `funding-cli-plant-${id}`,
        status,
        recipientType: 'TOKEN',
        currency: 'PHP',
        amount: new Prisma.Decimal('3.00'),
        ...(status === 'NEEDS_REVIEW' ? { reviewReason: 'an execute outcome stayed unknown' } : {}),
      },
    });
    return id;
  }

  async function plantPayment(linkId: string): Promise<string> {
    const id = randomUUID();
    await stack.database.payment.create({
      data: {
        id,
        idempotencyKey: `cli-plant-${id}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `payment-cli-plant-${id}`,
        status: 'NEEDS_REVIEW',
        linkId,
        currency: 'PHP',
        amount: new Prisma.Decimal('4.00'),
        reviewReason: 'the execute outcome stayed unknown after 4 attempts',
      },
    });
    return id;
  }
});

describe('the terminal renderer', () => {
  const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
  const event = (ms: number, status: FundingView['status'], detail: string | null, ref: string | null = null) => ({
    at: at(ms),
    status,
    requestReferenceNo: ref,
    detail,
  });
  const funding = (events: FundingView['events']): FundingView => ({
    fundingId: '00000000-0000-4000-8000-000000000000',
    status: events.at(-1)?.status ?? 'PENDING',
    recipient: { type: 'CODE', masked: '*****67' },
    amount: { currency: 'PHP', value: '1.00' },
    source: { type: 'TREASURY' },
    transferId: null,
    error: null,
    review: null,
    carriedBy: null,
    createdAt: at(0),
    updatedAt: at(0),
    events,
  });
  // The screen as a terminal shows it: "\r\x1b[2K" erases the current line.
  const screen = (output: string) =>
    output
      .split('\n')
      .map((line) => line.split('\r\x1b[2K').at(-1) ?? '')
      .join('\n');

  it('redraws the current step in place and turns finished steps into ✔ lines', () => {
    let output = '';
    let now = Date.parse(at(0));
    const progress = createFundingProgress({
      tty: true,
      color: false,
      write: (text) => (output += text),
      columns: () => 200,
      now: () => now,
    });
    const pending = event(0, 'PENDING', 'funding requested');
    const creating = event(400, 'CREATING', 'creating the transfer');
    const executing = event(1000, 'EXECUTING', 'transfer t1 created; executing', 'ref-1');
    const approved = event(2500, 'APPROVED', 'APPROVED', 'ref-2');

    progress.update(funding([pending]));
    now += 300;
    progress.tick();
    expect(screen(output)).toMatch(/^\S PENDING\s+0\.3s {2}funding requested$/);

    progress.update(funding([pending, creating, executing]));
    now = Date.parse(at(1000)) + 1200;
    progress.tick();
    expect(screen(output).split('\n')).toEqual([
      '✔ PENDING       0.4s  funding requested',
      '✔ CREATING      0.6s  creating the transfer',
      expect.stringMatching(/^\S EXECUTING\s+1\.2s {2}transfer t1 created; executing {2}\(ref ref-1\)$/),
    ]);

    progress.update(funding([pending, creating, executing, approved]));
    progress.close();
    expect(screen(output).split('\n')).toEqual([
      '✔ PENDING       0.4s  funding requested',
      '✔ CREATING      0.6s  creating the transfer',
      '✔ EXECUTING     1.5s  transfer t1 created; executing  (ref ref-1)',
      '✔ APPROVED            APPROVED  (ref ref-2)',
      '',
    ]);
  });

  it('marks a refused funding ✖ and keeps the live line within the terminal width', () => {
    let output = '';
    const progress = createFundingProgress({
      tty: true,
      color: false,
      write: (text) => (output += text),
      columns: () => 30,
      now: () => Date.parse(at(0)),
    });
    progress.update(funding([event(0, 'PENDING', 'a rather long detail that would wrap a narrow terminal')]));
    expect(screen(output).length).toBeLessThanOrEqual(29);
    progress.update(funding([event(0, 'PENDING', 'x'), event(100, 'REJECTED', 'M133', 'ref-9')]));
    expect(screen(output).split('\n').at(-2)).toBe('✖ REJECTED            M133  (ref ref-9)');
  });

  it('writes plain lines, one per new event, when not a terminal', () => {
    let output = '';
    const progress = createFundingProgress({ tty: false, color: false, write: (text) => (output += text) });
    const first = event(0, 'PENDING', 'funding requested');
    progress.update(funding([first]));
    progress.update(funding([first]));
    progress.tick();
    progress.update(funding([first, event(5, 'CREATING', null, 'ref-1')]));
    expect(output).toBe(`${at(0)}  PENDING      funding requested\n${at(5)}  CREATING     (ref ref-1)\n`);
  });
});
