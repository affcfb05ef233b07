// What the wallet client needs to reach the three services and read profiles: one zod schema,
// whether lib/config.ts built it from the environment or stack/sandbox-wallet.ts from the
// sandbox's partner registration.
import { z } from 'zod';
import type { WalletCallRecord, WalletCallStart } from './call-record.ts';
import { profileDecryptionJwkSchema, profileVerificationJwkSchema } from '../domain/jwk.ts';

const baseUrl = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ''));

const callback = <T extends (...args: never[]) => unknown>(what: string) =>
  z.custom<T>((value) => typeof value === 'function', { error: `${what} must be a function` });

export const walletClientConfigSchema = z.object({
  connectUrl: baseUrl,
  opUrl: baseUrl,
  transferUrl: baseUrl,
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  redirectUri: z.url(),
  transferApiKey: z.string().min(1),
  p2mId: z.string().min(1),
  profileDecryptionJwk: profileDecryptionJwkSchema,
  profileVerificationJwk: profileVerificationJwkSchema,
  /** Applies to every call, from sending the request to the end of the response body. */
  timeoutMs: z.number().int().positive().default(10_000),
  /** Milliseconds since the epoch; token expiry is computed from it. */
  now: callback<() => number>('now').optional(),
  /** Called after every HTTP call with a record that holds no secret; awaited, errors ignored. */
  onCall: callback<(record: WalletCallRecord) => void | Promise<void>>('onCall').optional(),
  /** Receives what onCall threw, so an audit failure is visible without failing the call. */
  onAuditError: callback<(error: unknown, record: WalletCallRecord) => void>('onAuditError').optional(),
  /** Called as each call starts; what it returns, as the call ends (tracing: a span per call). */
  onCallStart: callback<(call: WalletCallStart) => (record: WalletCallRecord) => void>('onCallStart').optional(),
});

/** As given by the caller (timeoutMs optional). */
export type WalletClientConfig = z.input<typeof walletClientConfigSchema>;
/** After defaults. */
export type ResolvedWalletClientConfig = z.output<typeof walletClientConfigSchema>;
