// Log lines carry the ids of their unit of work: every API line the request id (a well-formed
// incoming X-Request-Id, else a new one, echoed in the answer), every activity line the workflow
// id, run id and activity type. Captured from the API and the in-process worker at trace level.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

type LogLine = Record<string, unknown> & {
  msg?: string;
  requestId?: string;
  workflowId?: string;
  activityType?: string;
};

let stack: PartnerStack;
const lines: LogLine[] = [];

beforeAll(async () => {
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as LogLine);
      done();
    },
  });
  stack = await startPartnerStack({ logTo: capture });
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

/** A TOKEN funding whose access token walletflow believes expired: its activity refreshes and logs. */
async function fundExpiredLink(requestId: string): Promise<{ response: Response; funding: FundingView }> {
  const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' }, { expired: true });
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), 'x-request-id': requestId },
    body: JSON.stringify({ recipient: { type: 'TOKEN', linkId }, amount: { currency: 'PHP', value: '5.00' } }),
  });
  expect(response.status).toBe(202);
  const { fundingId } = (await response.json()) as FundingView;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const funding = (await (await stack.opsFetch(`/ops/fundings/${fundingId}`)).json()) as FundingView;
    if (funding.status === 'APPROVED') return { response, funding };
    if (Date.now() > deadline) throw new Error(`funding ${fundingId} still ${funding.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

describe('log lines', () => {
  let funding: FundingView;
  const requestId = `ops-${randomUUID()}`;

  beforeAll(async () => {
    const result = await fundExpiredLink(requestId);
    funding = result.funding;
    expect(result.response.headers.get('x-request-id')).toBe(requestId);
  }, 90_000);

  it('carry the request id on every API line of a request, inside handlers and after the body parser', () => {
    const ofRequest = lines.filter((line) => line.requestId === requestId);
    expect(ofRequest.map((line) => line.msg)).toEqual(expect.arrayContaining(['funding started', 'request']));
    const access = ofRequest.find((line) => line.msg === 'request');
    expect(access).toMatchObject({ method: 'POST', route: '/ops/fundings', status: 202 });
    const started = ofRequest.find((line) => line.msg === 'funding started');
    expect(started).toMatchObject({ fundingId: funding.fundingId });
    // The request's context does not leak into the worker's activities, nor one line's fields into the next.
    expect(ofRequest.some((line) => line.activityType !== undefined)).toBe(false);
    expect(access).not.toHaveProperty('fundingId');
  });

  it('carry the workflow id, run id and activity type on activity lines', async () => {
    const { workflowId } = await stack.database.funding.findUniqueOrThrow({
      where: { id: funding.fundingId },
      select: { workflowId: true },
    });
    const activityLines = lines.filter((line) => line.activityType !== undefined);
    const tokenReady = activityLines.find((line) => line.workflowId === workflowId && line.msg === 'user token ready');
    // A fresh funding's happy path runs as one local activity (the one pass, docs/architecture.md); its
    // token refresh logs under that activity's type.
    expect(tokenReady, JSON.stringify(activityLines)).toMatchObject({
      activityType: 'fundInOnePass',
      runId: expect.any(String),
    });
    expect(activityLines.every((line) => typeof line.workflowId === 'string' && line.requestId === undefined)).toBe(
      true,
    );
  });

  it('get a new request id when the incoming one is malformed, and one when there is none', async () => {
    for (const incoming of ['has spaces "and quotes"', 'x'.repeat(200), undefined]) {
      const response = await fetch(
        `${stack.apiBase}/healthz`,
        incoming === undefined ? {} : { headers: { 'x-request-id': incoming } },
      );
      const echoed = response.headers.get('x-request-id');
      expect(echoed).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(lines.some((line) => line.requestId === echoed && line.route === '/healthz')).toBe(true);
    }
  });
});
