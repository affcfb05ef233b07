// A client of the sandbox's own admin API (/_sandbox, contract-decisions section 9), for what drives
// a sandbox from outside: the tests and the history capture, the soak and the bench. `call`
// answers whatever came; the named calls throw on a status of 300 or more. A user gets a fresh
// mobile number and an upgraded, funded wallet unless the input says otherwise.
import { request } from 'undici';

export interface AdminAnswer<T> {
  status: number;
  body: T;
}

export interface AdminClientOptions {
  /** Longest wait for the answer's headers, and again for its body (default: undici's). */
  timeoutMs?: number;
}

export function sandboxAdminClient(sandboxUrl: string, options: AdminClientOptions = {}) {
  const timeouts =
    options.timeoutMs === undefined ? {} : { headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs };
  async function call<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<AdminAnswer<T>> {
    const response = await request(`${sandboxUrl}/_sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...timeouts,
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: (text === '' ? undefined : JSON.parse(text)) as T };
  }
  async function ok<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    const answer = await call<T>(method, path, body);
    if (answer.status >= 300)
      throw new Error(`sandbox ${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
  let mobiles = 0;
  return {
    call,
    createUser: (
      input: { kycLevel?: 'KYC0' | 'KYC1'; balance?: string; mobile?: string; [field: string]: unknown } = {},
    ) =>
      ok<{ userId: string; profileId: string; mobile: string; kycLevel: string; balance: string }>('POST', '/users', {
        mobile:
          input.mobile ?? `+6391${String(Date.now() % 1e6).padStart(6, '0')}${String(++mobiles).padStart(2, '0')}`,
        kycLevel: input.kycLevel ?? 'KYC1',
        balance: input.balance ?? '1000.00',
        ...input,
      }),
    users: () => ok<{ users: Array<{ userId: string; balance: string }> }>('GET', '/users'),
    user: (userId: string) =>
      ok<{ balance: string; kycLevel: string; profile: Record<string, unknown> }>('GET', `/users/${userId}`),
    setKyc: (userId: string, kycLevel: 'KYC0' | 'KYC1') => ok('POST', `/users/${userId}/kyc`, { kycLevel }),
    cashInCode: (userId: string) => ok<{ code: string; expiresAt: string }>('POST', `/users/${userId}/cash-in-codes`),
    standaloneTokens: (userId: string) =>
      ok<{ access_token: string; refresh_token: string; expires_in: string }>(
        'POST',
        `/users/${userId}/standalone-tokens`,
      ),
    embeddedTokens: (userId: string) =>
      ok<{ accessToken: string; refreshToken: string; expiresAt: number }>('POST', `/users/${userId}/embedded-tokens`),
    /** Transfers recorded as executed (nothing moves): a day of fundings' wallet side, planted at once. */
    plantTransfers: (input: {
      recipientUserId: string;
      amount: string;
      count: number;
      status?: 'APPROVED' | 'DECLINED';
    }) => ok<{ transferIds: string[] }>('POST', '/transfers', input),
    clock: () => ok<{ now: string }>('GET', '/clock'),
    advanceClock: (advanceSeconds: number) => ok<{ now: string }>('POST', '/clock', { advanceSeconds }),
    /** Opens the partner's tile as the wallet app does: the sandbox calls the session URL. */
    launch: (userId: string) => ok<{ sessionId: string; landingUrl: string }>('POST', '/launch', { userId }),
    setFaults: (
      rules: Array<{
        endpoint: string;
        mode: string;
        rate: number;
        status?: number;
        delayMs?: number;
        retryAfterSeconds?: number;
        code?: string;
      }>,
      seed = 1,
    ) => ok('PUT', '/faults', { seed, rules }),
    clearFaults: () => ok('PUT', '/faults', { rules: [] }),
    /** The executes queued by a late-effect fault take effect now; answers how many did. */
    releaseLateEffects: () => ok<{ released: number }>('POST', '/faults/late-effects/release'),
    settings: (settings: Record<string, unknown>) => ok('PUT', '/settings', settings),
    ledger: () =>
      ok<{
        transfers: Array<{
          transferId: string;
          status: string;
          executions: number;
          amount: { value: string };
          recipientUserId: string;
        }>;
        payments: Array<{
          paymentId: string;
          status: string;
          executions: number;
          amount: { value: string };
          fee: { value: string };
          userId: string;
        }>;
        refreshes: Array<{ kind: string; userId: string }>;
      }>('GET', '/ledger'),
    reset: () => ok('POST', '/reset'),
  };
}
export type SandboxAdminClient = ReturnType<typeof sandboxAdminClient>;
