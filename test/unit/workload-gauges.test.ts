// The on-call gauges (lib/workload-gauges.ts) from a stubbed read: values by kind and status, the
// oldest unfinished item's age, one read per cache window shared by every gauge, and a failed read
// reported as absent values (never stale ones).
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../lib/metrics.ts';
import { registerWorkloadGauges, type Workload } from '../../lib/workload-gauges.ts';
import { parseSamples, sampleValue } from '../support/prometheus-text.ts';

const start = Date.parse('2026-01-01T00:00:00Z');

function setup(read: () => Promise<Workload>, options: { readTimeoutMs?: number } = {}) {
  let now = start;
  const metrics = createMetrics();
  let reads = 0;
  const errors: unknown[] = [];
  registerWorkloadGauges(
    metrics.registry,
    () => {
      reads += 1;
      return read();
    },
    { cacheMs: 5000, now: () => now, onError: (error) => errors.push(error), ...options },
  );
  return {
    scrape: async () => metrics.registry.metrics(),
    advance: (ms: number) => (now += ms),
    reads: () => reads,
    errors,
  };
}

const workload: Workload = {
  funding: { byStatus: { NEEDS_REVIEW: 2, RECONCILING: 3, PENDING: 1 }, oldestCreatedAt: new Date(start - 90_000) },
  payment: { byStatus: { NEEDS_REVIEW: 1 }, oldestCreatedAt: null },
  onboarding: { pending: 4, oldestCreatedAt: new Date(start - 12_000) },
  settlements: { running: 2, oldestCreatedAt: new Date(start - 2_400_000) },
};

describe('the workload gauges', () => {
  it('report reviews, reconciling, unfinished items by status and the oldest age', async () => {
    const gauges = setup(async () => workload);
    const samples = await gauges.scrape();
    expect(sampleValue(samples, 'walletflow_fundings_in_review', {})).toBe(2);
    expect(sampleValue(samples, 'walletflow_payments_in_review', {})).toBe(1);
    expect(sampleValue(samples, 'walletflow_fundings_reconciling', {})).toBe(3);
    expect(sampleValue(samples, 'walletflow_unfinished_items', { kind: 'funding', status: 'PENDING' })).toBe(1);
    expect(sampleValue(samples, 'walletflow_unfinished_items', { kind: 'payment', status: 'EXECUTING' })).toBe(0);
    expect(sampleValue(samples, 'walletflow_oldest_unfinished_age_seconds', { kind: 'funding' })).toBe(90);
    expect(sampleValue(samples, 'walletflow_oldest_unfinished_age_seconds', { kind: 'payment' })).toBe(0);
    expect(sampleValue(samples, 'walletflow_onboardings_pending', {})).toBe(4);
    expect(sampleValue(samples, 'walletflow_oldest_pending_onboarding_age_seconds', {})).toBe(12);
    expect(sampleValue(samples, 'walletflow_settlement_runs_running', {})).toBe(2);
    expect(sampleValue(samples, 'walletflow_oldest_running_settlement_age_seconds', {})).toBe(2400);
    expect(gauges.reads()).toBe(1);
  });

  it('read once per cache window, however many gauges and scrapes', async () => {
    const gauges = setup(async () => workload);
    await Promise.all([gauges.scrape(), gauges.scrape()]);
    gauges.advance(4999);
    await gauges.scrape();
    expect(gauges.reads()).toBe(1);
    gauges.advance(1);
    const samples = await gauges.scrape();
    expect(gauges.reads()).toBe(2);
    expect(sampleValue(samples, 'walletflow_oldest_unfinished_age_seconds', { kind: 'funding' })).toBe(95);
  });

  it('a failed read: no values this scrape, the next scrape reads again', async () => {
    let fail = true;
    const gauges = setup(async () => {
      if (fail) throw new Error('database down');
      return workload;
    });
    const samples = await gauges.scrape();
    expect(
      parseSamples(samples).filter(
        (sample) => sample.name.startsWith('walletflow_') && /review|reconciling|unfinished/.test(sample.name),
      ),
    ).toEqual([]);
    expect(gauges.errors).toHaveLength(1);
    fail = false;
    expect(sampleValue(await gauges.scrape(), 'walletflow_fundings_in_review', {})).toBe(2);
  });

  it('a read slower than the bound: the scrape answers without them, one read at a time, its values once it is done', async () => {
    let finish: (workload: Workload) => void = () => undefined;
    const gauges = setup(() => new Promise<Workload>((resolve) => (finish = resolve)), { readTimeoutMs: 300 });
    // Before: the scrape waited as long as the read (a database stuck behind a lock held /metrics, and with it every
    // other metric of the process), and each scrape past the cache window started one more read beside it.
    const first = await gauges.scrape();
    expect(sampleValue(first, 'walletflow_fundings_in_review', {})).toBeUndefined();
    expect(first).toContain('# TYPE walletflow_http_request_duration_seconds histogram');
    // Past the cache window (5 s), short of giving the read up (twenty waits).
    gauges.advance(5_000);
    const second = await gauges.scrape();
    expect(sampleValue(second, 'walletflow_fundings_in_review', {})).toBeUndefined();
    expect(gauges.reads()).toBe(1);
    expect(gauges.errors).toHaveLength(2);
    finish(workload);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sampleValue(await gauges.scrape(), 'walletflow_fundings_in_review', {})).toBe(2);
    expect(gauges.reads()).toBe(1);
  });

  it('a read that never ends is given up after twenty waits: the next scrape reads again, and an onError that throws stops nothing', async () => {
    let reads = 0;
    const metrics = createMetrics();
    registerWorkloadGauges(
      metrics.registry,
      () => {
        reads += 1;
        // The first read hangs for good (a connection gone half-open); the second answers.
        return reads === 1 ? new Promise<Workload>(() => undefined) : Promise.resolve(workload);
      },
      {
        readTimeoutMs: 20,
        now: () => clock,
        onError: () => {
          throw new Error('a logger that fails');
        },
      },
    );
    let clock = start;
    expect(sampleValue(await metrics.registry.metrics(), 'walletflow_fundings_in_review', {})).toBeUndefined();
    clock += 19 * 20;
    await metrics.registry.metrics();
    expect(reads).toBe(1);
    clock += 20;
    expect(sampleValue(await metrics.registry.metrics(), 'walletflow_fundings_in_review', {})).toBe(2);
    expect(reads).toBe(2);
  });
});
