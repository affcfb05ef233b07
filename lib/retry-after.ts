// An HTTP answer's Retry-After, read as a wait: the wallet's (wallet/transport.ts) and a webhook endpoint's
// (webhooks/deliverer.ts).

/** Retry-After is seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
