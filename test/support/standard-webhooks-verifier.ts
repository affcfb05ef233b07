// A Standard Webhooks verifier written from the specification (standardwebhooks.com), on purpose
// independent of webhooks/signature.ts: what a partner's receiver would run. The secret is
// `whsec_` + base64 key; the signed content `${webhook-id}.${webhook-timestamp}.${body}`; the
// header a space-separated list of `v1,<base64 HMAC-SHA256>`; timestamps within 5 minutes.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function verifyStandardWebhook(
  secret: string,
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): boolean {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signature.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
