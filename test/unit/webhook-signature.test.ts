// Standard Webhooks signing (contract-decisions section 13): the specification's published test
// vector, and every signed attempt accepted by a verifier written from the specification.
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook, verifyWebhook, webhookHeaders } from '../../webhooks/signature.ts';
import { retryDelayMs, defaultWebhookRetryPolicy } from '../../webhooks/webhook-store.ts';
import { verifyStandardWebhook } from '../support/standard-webhooks-verifier.ts';

describe('webhook signatures', () => {
  it('reproduce the Standard Webhooks test vector', () => {
    expect(
      signWebhook(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('verify with an independent Standard Webhooks verifier, and fail on any change', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({
      id: 'evt_1',
      type: 'funding.approved',
      createdAt: new Date().toISOString(),
      data: {},
    });
    const headers = webhookHeaders(secret, 'evt_1', body, new Date());
    const given = {
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
    };
    expect(verifyStandardWebhook(secret, given, body)).toBe(true);
    expect(verifyStandardWebhook(secret, given, `${body} `)).toBe(false);
    expect(verifyStandardWebhook(newWebhookSecret(), given, body)).toBe(false);
    expect(verifyStandardWebhook(secret, { ...given, id: 'evt_2' }, body)).toBe(false);
    expect(verifyStandardWebhook(secret, given, body, Number(given.timestamp) + 600)).toBe(false);
  });

  it('the receiver of `walletflow webhooks listen` accepts the test vector among other signatures, and says why it refuses one', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    const at = new Date(1614265330_000);
    const headers = {
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: '1614265330',
      signature: 'v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    expect(verifyWebhook(secret, headers, body, at)).toEqual({ verified: true });
    const reasonOf = (result: ReturnType<typeof verifyWebhook>) => (result.verified ? 'verified' : result.reason);
    expect(reasonOf(verifyWebhook(secret, headers, body, new Date(at.getTime() + 301_000)))).toBe(
      'TIMESTAMP_OUT_OF_TOLERANCE',
    );
    expect(reasonOf(verifyWebhook(secret, headers, body, new Date(at.getTime() - 301_000)))).toBe(
      'TIMESTAMP_OUT_OF_TOLERANCE',
    );
    expect(reasonOf(verifyWebhook(secret, { ...headers, signature: 'v1,bm9wZQ==' }, body, at))).toBe(
      'NO_MATCHING_SIGNATURE',
    );
    expect(reasonOf(verifyWebhook(secret, headers, `${body} `, at))).toBe('NO_MATCHING_SIGNATURE');
    expect(reasonOf(verifyWebhook(secret, { ...headers, signature: undefined }, body, at))).toBe('MISSING_HEADER');
    expect(reasonOf(verifyWebhook(secret, { ...headers, id: undefined }, body, at))).toBe('MISSING_HEADER');
    expect(reasonOf(verifyWebhook(secret, { ...headers, timestamp: 'yesterday' }, body, at))).toBe('BAD_TIMESTAMP');
    expect(
      reasonOf(
        verifyWebhook(secret, { ...headers, signature: 'v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' }, body, at),
      ),
    ).toBe('NO_V1_SIGNATURE');
    const refused = verifyWebhook(secret, headers, body, new Date(at.getTime() + 301_000));
    expect(refused.verified ? '' : refused.message).toMatch(/301 s.*300 s/);
  });

  it('retry by default for at least 24 hours, backing off to an hour', () => {
    const policy = defaultWebhookRetryPolicy;
    expect(policy.retryForMs).toBeGreaterThanOrEqual(24 * 3_600_000);
    expect([1, 2, 3].map((n) => retryDelayMs(policy, n))).toEqual([30_000, 60_000, 120_000]);
    expect(retryDelayMs(policy, 50)).toBe(3_600_000);
  });
});
