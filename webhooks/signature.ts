// Standard Webhooks signing (https://www.standardwebhooks.com, contract-decisions section 13): a
// secret is `whsec_` and the base64 of 32 random bytes; each attempt is signed as
// `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` under the secret's
// base64-decoded bytes, the timestamp in whole seconds.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A fresh endpoint secret: shown once, stored sealed. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The HMAC key of a secret: the base64 after `whsec_` (the prefix is optional, as in the reference libraries). */
export function signingKeyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** The `webhook-signature` value of one attempt. */
export function signWebhook(secret: string, webhookId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', signingKeyOf(secret)).update(`${webhookId}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt; a fresh timestamp (and so signature) on every attempt, the same id. */
export function webhookHeaders(secret: string, webhookId: string, body: string, now: Date): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return { 'webhook-id': webhookId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhook(secret, webhookId, timestamp, body) };
}

/** A receiver's check (`walletflow webhooks listen`): one of the header's `v1,` signatures matches, and the timestamp is within `toleranceSeconds` of now. */
export function verifyWebhook(
  secret: string,
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined },
  body: string,
  now: Date = new Date(),
  toleranceSeconds = 300,
): boolean {
  const { id, timestamp, signature } = headers;
  if (!secret || !id || !timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(Math.floor(now.getTime() / 1000) - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, id, Number(timestamp), body).slice(3), 'base64');
  return signature.split(' ').some((entry) => {
    if (!entry.startsWith('v1,')) return false;
    const given = Buffer.from(entry.slice(3), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
