// The metric catalogue: names and label sets fixed (dashboards and alerts rely on them), label
// values bounded whatever the callers pass, and one registry per createMetrics call.
import { describe, expect, it } from 'vitest';
import { boundedLabel, createMetrics, MAX_LABEL_VALUES } from '../../lib/metrics.ts';
import { sampleValue } from '../support/prometheus-text.ts';

describe('createMetrics', () => {
  it('registers walletflow series with fixed names and label sets', async () => {
    const metrics = createMetrics();
    const described = (await metrics.registry.getMetricsAsJSON()).map((metric) => [metric.name, metric.type]);
    expect(Object.fromEntries(described)).toEqual({
      walletflow_fundings_finished_total: 'counter',
      walletflow_fundings_started_total: 'counter',
      walletflow_funding_duration_seconds: 'histogram',
      walletflow_payments_finished_total: 'counter',
      walletflow_payment_duration_seconds: 'histogram',
      walletflow_wallet_calls_total: 'counter',
      walletflow_wallet_call_duration_seconds: 'histogram',
      walletflow_token_refreshes_total: 'counter',
      walletflow_reconcile_repairs_total: 'counter',
      walletflow_session_url_duration_seconds: 'histogram',
      walletflow_onboarding_starts_total: 'counter',
      walletflow_http_request_duration_seconds: 'histogram',
      walletflow_report_rows_total: 'counter',
      walletflow_report_streams_total: 'counter',
      walletflow_console_live_streams: 'gauge',
      walletflow_console_live_buffered_bytes: 'gauge',
      walletflow_console_live_streams_ended_total: 'counter',
    });
  });

  it('keeps registries apart, so several stacks in one process count on their own', async () => {
    const first = createMetrics();
    const second = createMetrics();
    first.fundingFinished('APPROVED', new Date(Date.now() - 2000));
    expect(
      sampleValue(await first.registry.metrics(), 'walletflow_fundings_finished_total', { status: 'APPROVED' }),
    ).toBe(1);
    expect(
      sampleValue(await second.registry.metrics(), 'walletflow_fundings_finished_total', { status: 'APPROVED' }),
    ).toBeUndefined();
    expect(
      sampleValue(await first.registry.metrics(), 'walletflow_funding_duration_seconds_sum', { status: 'APPROVED' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('labels wallet calls with status, outcome and code, and a call without an answer as none', async () => {
    const metrics = createMetrics();
    metrics.walletCall({
      service: 'transfers',
      operation: 'transfers.execute',
      httpStatus: null,
      outcome: 'unknown',
      errorCode: 'TIMEOUT',
      durationMs: 5000,
    });
    metrics.walletCall({
      service: 'transfers',
      operation: 'transfers.execute',
      httpStatus: 200,
      outcome: 'ok',
      errorCode: null,
      durationMs: 40,
    });
    const text = await metrics.registry.metrics();
    expect(
      sampleValue(text, 'walletflow_wallet_calls_total', {
        operation: 'transfers.execute',
        http_status: 'none',
        outcome: 'unknown',
        error_code: 'TIMEOUT',
      }),
    ).toBe(1);
    expect(
      sampleValue(text, 'walletflow_wallet_calls_total', {
        operation: 'transfers.execute',
        http_status: '200',
        outcome: 'ok',
        error_code: 'none',
      }),
    ).toBe(1);
    expect(
      sampleValue(text, 'walletflow_wallet_call_duration_seconds_sum', { operation: 'transfers.execute' }),
    ).toBeCloseTo(5.04);
  });

  it('bounds label values an outside service or a caller controls', async () => {
    const metrics = createMetrics();
    metrics.walletCall({
      service: 'evil',
      operation: 'transfers.create',
      httpStatus: 400,
      outcome: 'weird',
      errorCode: 'has spaces <and> markup',
      durationMs: 1,
    });
    metrics.httpRequest({ method: 'BREW', route: '/ops/fundings/:fundingId', status: 200, seconds: 0.01 });
    metrics.sweepRepair('finished-from-wallet');
    metrics.tokenRefresh('EMBEDDED', 'refreshed');
    metrics.sessionUrl(200, 0.02);
    metrics.onboardingStart('already_closed');
    const text = await metrics.registry.metrics();
    expect(
      sampleValue(text, 'walletflow_wallet_calls_total', { service: 'other', outcome: 'other', error_code: 'other' }),
    ).toBe(1);
    expect(
      sampleValue(text, 'walletflow_http_request_duration_seconds_count', {
        method: 'other',
        route: '/ops/fundings/:fundingId',
      }),
    ).toBe(1);
    expect(sampleValue(text, 'walletflow_reconcile_repairs_total', { action: 'finished-from-wallet' })).toBe(1);
    expect(sampleValue(text, 'walletflow_token_refreshes_total', { kind: 'EMBEDDED', result: 'refreshed' })).toBe(1);
    expect(sampleValue(text, 'walletflow_session_url_duration_seconds_count', { status: '200' })).toBe(1);
    expect(sampleValue(text, 'walletflow_onboarding_starts_total', { outcome: 'already_closed' })).toBe(1);
  });
});

describe('boundedLabel', () => {
  it('passes known shapes, maps odd ones and any value past the limit to other', () => {
    const label = boundedLabel(2);
    expect(label(null)).toBe('none');
    expect(label('M133')).toBe('M133');
    expect(label('6001')).toBe('6001');
    expect(label('M133')).toBe('M133');
    expect(label('7011')).toBe('other');
    expect(label('a b')).toBe('other');
    expect(label('x'.repeat(65))).toBe('other');
    expect(MAX_LABEL_VALUES).toBeGreaterThan(10);
  });
});
