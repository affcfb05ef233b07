// Every ops route of the OpenAPI document driven through the real `walletflow` CLI with --output json,
// in a child process per command (about 60 of them) against the real API, Temporal worker,
// PostgreSQL and sandbox, the key from WALLETFLOW_OPS_KEY: a file of its own beside cli.test.ts, so
// that the two run side by side.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { fundingSchema } from '../../domain/funding.ts';
import { paymentSchema } from '../../domain/payment.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { useCliStack } from '../support/cli-stack.ts';

describe('walletflow against a running stack, every ops route', () => {
  const { stack, target, runCli, codeFor } = useCliStack();

  it('drives every ops route of the OpenAPI document through the CLI with --output json', async () => {
    const covered = new Set<string>();
    const json = async (operationId: string, args: string[], exitCode = 0) => {
      const result = await runCli([...args, '--output', 'json', ...target()]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(exitCode);
      expect(result.stdout + result.stderr).not.toContain(stack().opsKey);
      covered.add(operationId);
      return JSON.parse(result.stdout) as Record<string, unknown> & { items: Array<Record<string, unknown>> };
    };

    const partnerUserId = `cli-ops-${randomUUID()}`;
    const { linkId } = await createEmbeddedLink(
      stack(),
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
      // A HEAD is a monitor's, answered without the client (a refused one: 405): no method of its own.
      .flatMap(([, item]) =>
        Object.entries(item)
          .filter(([method]) => method !== 'head')
          .map(([, operation]) => operation.operationId),
      );
    expect([...covered].sort()).toEqual(opsOperations.sort());
    // A CLI process per route (about 60 of them): a minute on a quiet machine, more beside the suite.
  }, 240_000);

  /** A funding row as a crashed or parked run leaves it (no workflow waits for it). */
  async function plantFunding(status: 'PENDING' | 'NEEDS_REVIEW'): Promise<string> {
    const id = randomUUID();
    await stack().database.funding.create({
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
    await stack().database.payment.create({
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
