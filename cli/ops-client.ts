// The CLI's client of the fundings ops API (contract-decisions section 8): Node's global fetch, the
// answers validated with the same zod shapes the API is built on, errors as two typed classes.
import { z } from 'zod';
import { fundingSchema, type CreateFundingRequest, type FundingView } from '../domain/funding.ts';
import { paymentSchema, type CreatePaymentRequest, type PaymentView } from '../domain/payment.ts';
import type { OpsTarget } from './ops-target.ts';

/** The API answered with a problem (or with something that is not the expected shape). */
export class OpsApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${code} (HTTP ${status}): ${detail}`);
  }
  /** Worth another try while following a funding: the server or something in between failed. */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

/** No answer at all: nothing listens at the URL, DNS failed, the connection broke or timed out. */
export class OpsUnreachableError extends Error {
  constructor(
    readonly apiBase: string,
    readonly reason: string,
  ) {
    super(`the ops API is not reachable at ${apiBase} (${reason})`);
  }
}

const problemSchema = z.object({
  code: z.string(),
  title: z.string().optional(),
  detail: z.string().optional(),
});

export interface FundingAnswer {
  funding: FundingView;
  /** The body as the API sent it (for --json). */
  raw: unknown;
}

export interface PaymentAnswer {
  payment: PaymentView;
  raw: unknown;
}

export interface OpsClient {
  /** POST /ops/fundings: `created` is false when the key was seen before (200, the same funding). */
  createFunding(request: CreateFundingRequest, idempotencyKey: string): Promise<FundingAnswer & { created: boolean }>;
  /** GET /ops/fundings/{id}: null when the API does not know it (404). */
  getFunding(fundingId: string): Promise<FundingAnswer | null>;
  /** POST /ops/payments: `created` is false when the key was seen before (200, the same payment). */
  createPayment(request: CreatePaymentRequest, idempotencyKey: string): Promise<PaymentAnswer & { created: boolean }>;
  /** GET /ops/payments/{id}: null when the API does not know it (404). */
  getPayment(id: string): Promise<PaymentAnswer | null>;
  /** Any other ops route (the ledger's): the body on 2xx, else an OpsApiError from its problem document. */
  request(method: 'GET' | 'POST', path: string, init?: { idempotencyKey?: string; body?: unknown; raw?: boolean }): Promise<{ status: number; body: unknown }>;
}

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE']);

function unreachableReason(error: unknown): string | null {
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'no answer in time';
  if (!(error instanceof TypeError)) return null;
  const cause = (error as TypeError & { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  if (code && (networkCodes.has(code) || code.startsWith('UND_ERR'))) return code;
  return typeof cause?.message === 'string' ? cause.message : error.message;
}

export function createOpsClient(target: OpsTarget, options: { requestTimeoutMs?: number } = {}): OpsClient {
  const requestTimeoutMs = options.requestTimeoutMs ?? 15_000;

  async function call(method: 'GET' | 'POST', path: string, init: { headers?: Record<string, string>; body?: unknown } = {}) {
    let response: Response;
    try {
      response = await fetch(`${target.apiBase}${path}`, {
        method,
        headers: {
          accept: 'application/json, application/problem+json',
          authorization: `Bearer ${target.key}`,
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
    } catch (error) {
      const reason = unreachableReason(error);
      if (reason !== null) throw new OpsUnreachableError(target.apiBase, reason);
      throw error;
    }
    const text = await response.text().catch(() => '');
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body };
  }

  const problemOf = (status: number, body: unknown): OpsApiError => {
    const problem = problemSchema.safeParse(body);
    if (problem.success) return new OpsApiError(status, problem.data.code, problem.data.detail ?? problem.data.title ?? 'no detail');
    return new OpsApiError(status, `HTTP_${status}`, 'the answer is not a problem document: is this walletflow’s API?');
  };

  const fundingOf = (status: number, body: unknown): FundingAnswer => {
    const funding = fundingSchema.safeParse(body);
    if (!funding.success) {
      throw new OpsApiError(status, 'UNEXPECTED_ANSWER', `the answer is not a funding (${funding.error.issues[0]?.path.join('.') || 'body'}: ${funding.error.issues[0]?.message ?? 'invalid'})`);
    }
    return { funding: funding.data, raw: body };
  };

  const paymentOf = (status: number, body: unknown): PaymentAnswer => {
    const payment = paymentSchema.safeParse(body);
    if (!payment.success) {
      throw new OpsApiError(status, 'UNEXPECTED_ANSWER', `the answer is not a payment (${payment.error.issues[0]?.path.join('.') || 'body'}: ${payment.error.issues[0]?.message ?? 'invalid'})`);
    }
    return { payment: payment.data, raw: body };
  };

  return {
    async request(method, path, init = {}) {
      if (init.raw) {
        const response = await fetch(`${target.apiBase}${path}`, { headers: { authorization: `Bearer ${target.key}` }, signal: AbortSignal.timeout(requestTimeoutMs) }).catch((error: unknown) => {
          throw new OpsUnreachableError(target.apiBase, unreachableReason(error) ?? String(error));
        });
        const text = await response.text();
        if (!response.ok) throw problemOf(response.status, JSON.parse(text || 'null') as unknown);
        return { status: response.status, body: text };
      }
      const { status, body } = await call(method, path, {
        ...(init.idempotencyKey ? { headers: { 'idempotency-key': init.idempotencyKey } } : {}),
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      if (status < 200 || status > 299) throw problemOf(status, body);
      return { status, body };
    },
    async createPayment(request, idempotencyKey) {
      const { status, body } = await call('POST', '/ops/payments', { headers: { 'idempotency-key': idempotencyKey }, body: request });
      if (status !== 200 && status !== 202) throw problemOf(status, body);
      return { ...paymentOf(status, body), created: status === 202 };
    },
    async getPayment(id) {
      const { status, body } = await call('GET', `/ops/payments/${encodeURIComponent(id)}`);
      if (status === 404) {
        const problem = problemSchema.safeParse(body);
        if (problem.success && problem.data.code === 'PAYMENT_NOT_FOUND') return null;
        throw problemOf(status, body);
      }
      if (status !== 200) throw problemOf(status, body);
      return paymentOf(status, body);
    },
    async createFunding(request, idempotencyKey) {
      const { status, body } = await call('POST', '/ops/fundings', { headers: { 'idempotency-key': idempotencyKey }, body: request });
      if (status !== 200 && status !== 202) throw problemOf(status, body);
      return { ...fundingOf(status, body), created: status === 202 };
    },
    async getFunding(fundingId) {
      const { status, body } = await call('GET', `/ops/fundings/${encodeURIComponent(fundingId)}`);
      if (status === 404) {
        const problem = problemSchema.safeParse(body);
        // A 404 from something else than walletflow (a wrong --api path) is not "no such funding".
        if (problem.success && problem.data.code === 'FUNDING_NOT_FOUND') return null;
        throw problemOf(status, body);
      }
      if (status !== 200) throw problemOf(status, body);
      return fundingOf(status, body);
    },
  };
}
