// The sandbox for the wallet client's integration tests: start it, drive its admin API, log in
// through its HTML pages with plain HTTP, and build a client from its partner registration.
import { expect } from 'vitest';
import { sandboxWalletConfig } from '../../stack/sandbox-wallet.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../../sandbox/admin-client.ts';
import { startSandbox } from '../../sandbox/server.ts';
import type { PartnerRegistration, RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient } from '../../wallet/index.ts';
import type { WalletCallRecord, WalletClient, WalletClientConfig, WalletError } from '../../wallet/index.ts';
import { isWalletError } from '../../wallet/index.ts';
import { loginForms } from './sandbox-harness.ts';

export type { RunningSandbox } from '../../sandbox/server.ts';

export async function startTestSandbox(registration?: Partial<PartnerRegistration>): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...(registration ? { registration } : {}) });
}

/** The sandbox's admin API (contract-decisions section 9). */
export const sandboxAdmin = (sandbox: RunningSandbox): SandboxAdmin => sandboxAdminClient(sandbox.url);
export type SandboxAdmin = SandboxAdminClient;

/**
 * Logs in through GET /connect/authorize and its two forms (password, then the sandbox's
 * one-time password shown on the page) and returns the callback's query parameters.
 */
export async function loginThroughPages(
  sandbox: RunningSandbox,
  authorizeUrl: string,
  password = 'sandbox123',
): Promise<URLSearchParams> {
  const forms = loginForms(sandbox);
  const credentials = await forms.openUrl(authorizeUrl);
  expect(credentials.status).toBe(200);
  const otpPage = await forms.submit(credentials, { password, action: 'continue' });
  expect(otpPage.status).toBe(200);
  const otp = /sandbox OTP: <code>(\d+)<\/code>/.exec(otpPage.html)?.[1];
  if (otp === undefined) throw new Error('no OTP hint on the page');
  const callback = await forms.submit(otpPage, { otp, action: 'continue' });
  expect(callback.status).toBe(302);
  return new URL(String(callback.location)).searchParams;
}

export interface RecordingClient {
  wallet: WalletClient;
  records: WalletCallRecord[];
}

export function clientFor(sandbox: RunningSandbox, overrides: Partial<WalletClientConfig> = {}): RecordingClient {
  const records: WalletCallRecord[] = [];
  const wallet = createWalletClient({
    ...sandboxWalletConfig(sandbox),
    timeoutMs: 5_000,
    onCall: (record) => void records.push(record),
    ...overrides,
  });
  return { wallet, records };
}

export async function walletFailure(promise: Promise<unknown>): Promise<WalletError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isWalletError(error)) throw new Error(`expected a WalletError, got ${String(error)}`);
  return error;
}

/** Fails when any of the values appears in the text (records, messages). */
export function expectNoneOf(text: string, secrets: readonly string[]): void {
  for (const secret of secrets) if (secret.length > 0) expect(text).not.toContain(secret);
}
