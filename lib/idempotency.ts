// What fundings and payments share when a request starts a workflow, beside their contracts
// (workflows/*.contract.ts hold the workflow id scheme and the start): the key's hash those ids
// are built from, and the request fingerprint.
import { createHash, createHmac } from 'node:crypto';

/** SHA-256 hex of a UTF-8 string, for the contracts' workflow ids (their bundle has no node:crypto). */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * HMAC of the normalised request: a repeated key must come with the same body. The HMAC of the
 * parts' JSON array, written part by part (a batch's 100,000 parts are never one array or string).
 */
export function requestFingerprint(key: Buffer, canonical: Iterable<string>): string {
  const hmac = createHmac('sha256', key).update('[');
  let first = true;
  for (const part of canonical) {
    hmac.update(first ? JSON.stringify(part) : `,${JSON.stringify(part)}`);
    first = false;
  }
  return hmac.update(']').digest('hex');
}
