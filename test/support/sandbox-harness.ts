// Test helpers that drive the sandbox over real HTTP with plain fetch: admin calls, credentials
// headers, the login forms, and an independent node:crypto decryption of the profile JWE.
import {
  createDecipheriv,
  createHmac,
  createPrivateKey,
  privateDecrypt,
  constants,
  randomUUID,
  type JsonWebKey,
} from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { RunningSandbox } from '../../sandbox/server.ts';

export interface JsonAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

async function readJson<T>(response: Response): Promise<JsonAnswer<T>> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Left as text: fault tests look at unparsable bodies.
  }
  return { status: response.status, headers: response.headers, body: body as T };
}

/** Any JSON call; `headers` are added to a JSON content type when a body is given. */
export async function callJson<T = Record<string, unknown>>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<JsonAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  if (init.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  return readJson<T>(response);
}

export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** The admin API of one running sandbox. */
export function adminOf(sandbox: RunningSandbox) {
  const admin = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    callJson<T>(`${sandbox.url}/_sandbox${path}`, { method, ...(body === undefined ? {} : { body }) });
  return {
    call: admin,
    reset: async () => {
      const answer = await admin('POST', '/reset');
      if (answer.status !== 204) throw new Error(`reset answered ${answer.status}`);
    },
    createUser: async (input: Record<string, unknown>) => {
      const answer = await admin<{ userId: string; profileId: string; mobile: string; balance: string }>(
        'POST',
        '/users',
        input,
      );
      if (answer.status !== 201)
        throw new Error(`create user answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body;
    },
    user: async (userId: string) =>
      (await admin<{ balance: string; kycLevel: string }>('GET', `/users/${userId}`)).body,
    cashInCode: async (userId: string) =>
      (await admin<{ code: string; expiresAt: string }>('POST', `/users/${userId}/cash-in-codes`)).body,
    standaloneTokens: async (userId: string) =>
      (await admin<{ access_token: string; refresh_token: string }>('POST', `/users/${userId}/standalone-tokens`)).body,
    embeddedTokens: async (userId: string) =>
      (
        await admin<{ accessToken: string; refreshToken: string; expiresAt: number }>(
          'POST',
          `/users/${userId}/embedded-tokens`,
        )
      ).body,
    advanceClock: async (advanceSeconds: number) =>
      (await admin<{ now: string }>('POST', '/clock', { advanceSeconds })).body,
    settings: async (settings: Record<string, unknown>) => {
      const answer = await admin('PUT', '/settings', settings);
      if (answer.status !== 200) throw new Error(`settings answered ${answer.status}`);
      return answer.body;
    },
    faults: async (configuration: Record<string, unknown>) => {
      const answer = await admin('PUT', '/faults', configuration);
      if (answer.status !== 200) throw new Error(`faults answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body;
    },
    ledger: async () =>
      (
        await admin<{
          transfers: {
            transferId: string;
            status: string;
            recipientUserId: string;
            amount: { value: string };
            executions: number;
          }[];
          payments: { paymentId: string; status: string; userId: string; executions: number }[];
          refreshes: { kind: string; userId: string; at: string }[];
          partnerFundingBalance: string;
        }>('GET', '/ledger')
      ).body,
  };
}
export type Admin = ReturnType<typeof adminOf>;

/** POST /connect/token with the registered client's Basic credentials. */
export async function tokenRequest(sandbox: RunningSandbox, form: Record<string, string>, authorization?: string) {
  const response = await fetch(`${sandbox.url}/connect/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: authorization ?? basicAuth(sandbox.partner.clientId, sandbox.partner.clientSecret),
    },
    body: new URLSearchParams(form).toString(),
  });
  return readJson<Record<string, string>>(response);
}

export async function clientToken(sandbox: RunningSandbox): Promise<string> {
  const answer = await tokenRequest(sandbox, { grant_type: 'client_credentials' });
  const token = answer.body.access_token;
  if (answer.status !== 200 || token === undefined) throw new Error(`client token answered ${answer.status}`);
  return token;
}

export function opHeaders(
  client: string,
  userToken?: string,
  reference: string = randomUUID(),
): Record<string, string> {
  return {
    authorization: `Bearer ${client}`,
    'request-reference-no': reference,
    'content-type': 'application/json',
    ...(userToken === undefined ? {} : { 'x-authorization': userToken }),
  };
}

export function transferHeaders(sandbox: RunningSandbox, reference: string = randomUUID()): Record<string, string> {
  return { authorization: basicAuth(sandbox.partner.transferApiKey, ''), 'request-reference-no': reference };
}

export interface TransferBody {
  transferId: string;
  status: string;
  recipient: { type: string; value: string };
  amount: { currency: string; value: number };
  requestReferenceNumber: string;
  createdAt: string;
  updatedAt: string;
  decline: { code: string; message: string } | null;
  code?: string;
}

export function createTransferCall(
  sandbox: RunningSandbox,
  recipient: { type: 'TOKEN' | 'CODE'; value: string },
  value: number,
  reference?: string,
) {
  return callJson<TransferBody>(`${sandbox.url}/v1/transfers`, {
    method: 'POST',
    headers: transferHeaders(sandbox, reference),
    body: { recipient, amount: { currency: 'PHP', value } },
  });
}

export function executeTransferCall(sandbox: RunningSandbox, transferId: string) {
  return callJson<TransferBody>(`${sandbox.url}/v1/transfers/${transferId}/execute`, {
    method: 'PUT',
    headers: transferHeaders(sandbox),
  });
}

export function retrieveTransferCall(sandbox: RunningSandbox, transferId: string) {
  return callJson<TransferBody>(`${sandbox.url}/v1/transfers/${transferId}`, { headers: transferHeaders(sandbox) });
}

export function authorizeUrl(sandbox: RunningSandbox, params: Record<string, string>): string {
  const url = new URL(`${sandbox.url}/connect/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: sandbox.partner.clientId,
    redirect_uri: sandbox.partner.redirectUri,
    prompt: 'login',
    ...params,
  }).toString();
  return url.toString();
}

export interface FormStep {
  status: number;
  html: string;
  location: string | null;
}

function hiddenLoginId(html: string): string {
  const match = /name="login_id" value="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error('no login_id on the page');
  return match[1];
}

function formAction(html: string): string {
  const match = /<form method="post" action="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error('no form on the page');
  return match[1];
}

/** The login pages driven as a browser without JavaScript would: GET, then POST each form. */
export function loginForms(sandbox: RunningSandbox) {
  const send = async (url: string, init?: RequestInit): Promise<FormStep> => {
    const response = await fetch(url, { redirect: 'manual', ...init });
    return { status: response.status, html: await response.text(), location: response.headers.get('location') };
  };
  return {
    open: (params: Record<string, string>) => send(authorizeUrl(sandbox, params)),
    /** The first page of an authorize URL made elsewhere (the wallet client's). */
    openUrl: (url: string) => send(url),
    submit: (page: FormStep, fields: Record<string, string>) =>
      send(new URL(formAction(page.html), sandbox.url).toString(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ login_id: hiddenLoginId(page.html), ...fields }).toString(),
      }),
  };
}

/** Logs in through the pages and returns the callback parameters. */
export async function loginThroughPages(
  sandbox: RunningSandbox,
  mobile: string,
  password: string,
  state = 'xyz',
): Promise<URLSearchParams> {
  const forms = loginForms(sandbox);
  const first = await forms.open({ user_id: mobile, state });
  const otp = await forms.submit(first, { password, action: 'continue' });
  const done = await forms.submit(otp, { otp: '123456', action: 'continue' });
  if (done.status !== 302 || done.location === null) throw new Error(`login ended with ${done.status}`);
  return new URL(done.location).searchParams;
}

/**
 * Decrypts the profile `data` without jose: RSA-OAEP (SHA-1) unwraps the key, AES-256-GCM with
 * the protected header as AAD decrypts, raw DEFLATE inflates, HMAC-SHA256 verifies the JWS.
 */
export function openProfile(
  data: string,
  privateJwk: Record<string, unknown>,
  octJwk: Record<string, unknown>,
): { header: Record<string, unknown>; jwsHeader: Record<string, unknown>; payload: Record<string, unknown> } {
  const [protectedHeader = '', encryptedKey = '', iv = '', ciphertext = '', tag = ''] = data.split('.');
  if (data.split('.').length !== 5) throw new Error('not a compact JWE');
  const header = JSON.parse(Buffer.from(protectedHeader, 'base64url').toString('utf8')) as Record<string, unknown>;
  const key = createPrivateKey({ key: privateJwk as JsonWebKey, format: 'jwk' });
  const cek = privateDecrypt(
    { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' },
    Buffer.from(encryptedKey, 'base64url'),
  );
  const decipher = createDecipheriv('aes-256-gcm', cek, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(protectedHeader, 'ascii'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  const compressed = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  const jws = inflateRawSync(compressed).toString('utf8');
  const [jwsHeader = '', payload = '', signature = ''] = jws.split('.');
  const expected = createHmac('sha256', Buffer.from(String(octJwk.k), 'base64url'))
    .update(`${jwsHeader}.${payload}`)
    .digest('base64url');
  if (expected !== signature) throw new Error('JWS signature does not verify');
  return {
    header,
    jwsHeader: JSON.parse(Buffer.from(jwsHeader, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}
