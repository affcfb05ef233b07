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
  const mac = createHmac('sha256', signingKeyOf(secret))
    .update(`${webhookId}.${timestampSeconds}.${body}`, 'utf8')
    .digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt; a fresh timestamp (and so signature) on every attempt, the same id. */
export function webhookHeaders(
  secret: string,
  webhookId: string,
  body: string,
  now: Date,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, webhookId, timestamp, body),
  };
}

/** Why a delivery was refused: each a code a receiver can log and branch on. */
export type WebhookRefusal =
  'MISSING_HEADER' | 'BAD_TIMESTAMP' | 'TIMESTAMP_OUT_OF_TOLERANCE' | 'NO_V1_SIGNATURE' | 'NO_MATCHING_SIGNATURE';

export type WebhookVerification = { verified: true } | { verified: false; reason: WebhookRefusal; message: string };

const refused = (reason: WebhookRefusal, message: string): WebhookVerification => ({
  verified: false,
  reason,
  message,
});

/**
 * A receiver's check (`walletflow webhooks listen`): one of the header's `v1,` signatures matches,
 * and the timestamp is within `toleranceSeconds` of now. A refusal says why, as stripe-node's
 * verification error does: a missing header, a timestamp that is not one or is out of tolerance,
 * no `v1` signature at all, or none that matches (a wrong secret, or a body changed on the way).
 */
export function verifyWebhook(
  secret: string,
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined },
  body: string,
  now: Date = new Date(),
  toleranceSeconds = 300,
): WebhookVerification {
  const { id, timestamp, signature } = headers;
  const missing = (['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const).filter(
    (_name, index) => ![id, timestamp, signature][index],
  );
  if (missing.length > 0) return refused('MISSING_HEADER', `no ${missing.join(', ')} header`);
  if (!/^\d{1,12}$/.test(timestamp!))
    return refused('BAD_TIMESTAMP', 'webhook-timestamp is not whole seconds since the epoch');
  const skew = Math.abs(Math.floor(now.getTime() / 1000) - Number(timestamp));
  if (skew > toleranceSeconds)
    return refused(
      'TIMESTAMP_OUT_OF_TOLERANCE',
      `webhook-timestamp is ${skew} s from now, more than the ${toleranceSeconds} s tolerated (a replay, or a clock off)`,
    );
  const candidates = signature!.split(' ').filter((entry) => entry.startsWith('v1,'));
  if (candidates.length === 0) return refused('NO_V1_SIGNATURE', 'webhook-signature holds no v1 signature');
  if (!secret) return refused('NO_MATCHING_SIGNATURE', 'no secret to check the signature with');
  const expected = Buffer.from(signWebhook(secret, id!, Number(timestamp), body).slice(3), 'base64');
  const matches = candidates.some((entry) => {
    const given = Buffer.from(entry.slice(3), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches
    ? { verified: true }
    : refused(
        'NO_MATCHING_SIGNATURE',
        'no signature matches the body under this secret (a wrong secret, or the body changed on the way)',
      );
}
