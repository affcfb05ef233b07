// The sandbox for the wallet client's integration tests: start it, drive its admin API, log in
// through its HTML pages with plain HTTP, and build a client from its partner registration.
import { request } from 'undici';
import { expect } from 'vitest';
import { sandboxWalletConfig } from '../../cli/stack/sandbox-wallet.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../../sandbox/admin-client.ts';
import { startSandbox } from '../../sandbox/server.ts';
import type { PartnerRegistration, RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient } from '../../wallet/index.ts';
import type { WalletCallRecord, WalletClient, WalletClientConfig, WalletError } from '../../wallet/index.ts';
import { isWalletError } from '../../wallet/index.ts';

export type { RunningSandbox } from '../../sandbox/server.ts';

export async function startTestSandbox(registration?: Partial<PartnerRegistration>): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...(registration ? { registration } : {}) });
}

/** The sandbox's admin API (contract-decisions section 9). */
export const sandboxAdmin = (sandbox: RunningSandbox): SandboxAdmin => sandboxAdminClient(sandbox.url);
export type SandboxAdmin = SandboxAdminClient;

/** Values of a hidden or text input in the sandbox's HTML (read from the page, not assumed). */
function inputValue(html: string, name: string): string {
  const match = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  if (!match?.[1]) throw new Error(`no ${name} input in the page`);
  return match[1];
}
function formAction(html: string): string {
  const match = /<form[^>]*action="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error('no form in the page');
  return match[1].replaceAll('&amp;', '&');
}

/**
 * Logs in through GET /connect/authorize and its two forms (password, then the sandbox's
 * one-time password shown on the page) and returns the callback's query parameters.
 */
export async function loginThroughPages(
  sandbox: RunningSandbox,
  authorizeUrl: string,
  password = 'sandbox123',
): Promise<URLSearchParams> {
  const page = await request(authorizeUrl);
  const credentials = await page.body.text();
  expect(page.statusCode).toBe(200);
  const post = async (action: string, fields: Record<string, string>) => {
    const response = await request(new URL(action, sandbox.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: response.statusCode, location: response.headers.location, html: await response.body.text() };
  };
  const otpPage = await post(formAction(credentials), {
    login_id: inputValue(credentials, 'login_id'),
    password,
    action: 'continue',
  });
  expect(otpPage.status).toBe(200);
  const otp = /sandbox OTP: <code>(\d+)<\/code>/.exec(otpPage.html)?.[1];
  if (otp === undefined) throw new Error('no OTP hint on the page');
  const callback = await post(formAction(otpPage.html), { login_id: inputValue(otpPage.html, 'login_id'), otp, action: 'continue' });
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
