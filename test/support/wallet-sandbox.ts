// The sandbox for the wallet client's integration tests: start it, drive its admin API, log in
// through its HTML pages with plain HTTP, and build a client from its partner registration.
import { request } from 'undici';
import { expect } from 'vitest';
import { sandboxWalletConfig } from '../../cli/stack/sandbox-wallet.ts';
import { startSandbox } from '../../sandbox/server.ts';
import type { PartnerRegistration, RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient } from '../../wallet/index.ts';
import type { WalletCallRecord, WalletClient, WalletClientConfig, WalletError } from '../../wallet/index.ts';
import { isWalletError } from '../../wallet/index.ts';

export type { RunningSandbox } from '../../sandbox/server.ts';

export async function startTestSandbox(registration?: Partial<PartnerRegistration>): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...(registration ? { registration } : {}) });
}

interface AdminAnswer<T> {
  status: number;
  body: T;
}

/** The admin API under /_sandbox (contract-decisions section 9). */
export function sandboxAdmin(sandbox: RunningSandbox) {
  async function call<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<AdminAnswer<T>> {
    const response = await request(`${sandbox.url}/_sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: (text === '' ? undefined : JSON.parse(text)) as T };
  }
  async function ok<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    const answer = await call<T>(method, path, body);
    if (answer.status >= 300) throw new Error(`sandbox ${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
  let mobiles = 0;
  return {
    call,
    createUser: (input: { kycLevel?: 'KYC0' | 'KYC1'; balance?: string; mobile?: string; [field: string]: unknown } = {}) =>
      ok<{ userId: string; profileId: string; mobile: string; kycLevel: string; balance: string }>('POST', '/users', {
        mobile: input.mobile ?? `+6391${String(Date.now() % 1e6).padStart(6, '0')}${String(++mobiles).padStart(2, '0')}`,
        kycLevel: input.kycLevel ?? 'KYC1',
        balance: input.balance ?? '1000.00',
        ...input,
      }),
    user: (userId: string) => ok<{ balance: string; kycLevel: string; profile: Record<string, unknown> }>('GET', `/users/${userId}`),
    setKyc: (userId: string, kycLevel: 'KYC0' | 'KYC1') => ok('POST', `/users/${userId}/kyc`, { kycLevel }),
    cashInCode: (userId: string) => ok<{ code: string; expiresAt: string }>('POST', `/users/${userId}/cash-in-codes`),
    standaloneTokens: (userId: string) =>
      ok<{ access_token: string; refresh_token: string; expires_in: string }>('POST', `/users/${userId}/standalone-tokens`),
    embeddedTokens: (userId: string) =>
      ok<{ accessToken: string; refreshToken: string; expiresAt: number }>('POST', `/users/${userId}/embedded-tokens`),
    advanceClock: (advanceSeconds: number) => ok<{ now: string }>('POST', '/clock', { advanceSeconds }),
    setFaults: (rules: Array<{ endpoint: string; mode: string; rate: number; status?: number; delayMs?: number; retryAfterSeconds?: number }>, seed = 1) =>
      ok('PUT', '/faults', { seed, rules }),
    clearFaults: () => ok('PUT', '/faults', { rules: [] }),
    settings: (settings: Record<string, unknown>) => ok('PUT', '/settings', settings),
    ledger: () =>
      ok<{
        transfers: Array<{ transferId: string; status: string; executions: number; amount: { value: string } }>;
        payments: Array<{ paymentId: string; status: string; executions: number; userId: string }>;
        refreshes: Array<{ kind: string; userId: string }>;
      }>('GET', '/ledger'),
    reset: () => ok('POST', '/reset'),
  };
}
export type SandboxAdmin = ReturnType<typeof sandboxAdmin>;

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
