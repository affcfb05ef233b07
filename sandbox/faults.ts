// Fault injection, reproducible under a seed: one wrapper around each faultable endpoint decides
// per request whether a configured rule fires, and whether its fault lands before the handler's
// effect (nothing changes) or after it (the state changed and the caller cannot know).
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestHandler, Response } from 'express';
import { z } from 'zod';
import { runHandler, sendAnswer, type EndpointAnswer, type EndpointHandler } from './answers.ts';

export const faultEndpoints = [
  'connect.token',
  'op.tokens',
  'op.profile',
  'op.payments.create',
  'op.payments.execute',
  'transfers.create',
  'transfers.execute',
  'transfers.retrieve',
] as const;
export type FaultEndpoint = (typeof faultEndpoints)[number];

export const faultModes = [
  'latency',
  'error-before-effect',
  'error-after-effect',
  'reset-after-effect',
  'hang-after-effect',
  'temporary-failure',
  'rate-limited',
  'garbage-body',
  'late-effect',
  'altered-answer',
] as const;
export type FaultMode = (typeof faultModes)[number];

/**
 * late-effect (contract section 9): an execute queued behind a slow gateway, answered 504 at once
 * and processed `delayMs` later, after the caller gave up. Only executes move money that way.
 */
const lateEffectEndpoints: readonly FaultEndpoint[] = ['transfers.execute', 'op.payments.execute'];

/**
 * altered-answer (an extension of section 9): the call takes effect, and its answer comes back
 * altered on the way, as a faulty or hostile gateway would: a create answers ten times the
 * amount, a retrieve or an execute names another transfer or payment. The partner must notice and stop.
 */
const alteredAnswerEndpoints: readonly FaultEndpoint[] = [
  'transfers.create',
  'transfers.execute',
  'transfers.retrieve',
  'op.payments.create',
  'op.payments.execute',
];

/**
 * A gateway error's `code` (an extension of section 9): error-before-effect and error-after-effect answer their status
 * (a 5xx by default) with the service's error body carrying that code, as a gateway that relays an upstream error or
 * templates its own in the service's shape would. A code under another status than the service gives it is no answer
 * of the service's: the partner must not read it as one.
 */
const codedErrorModes: readonly FaultMode[] = ['error-before-effect', 'error-after-effect'];

const faultRuleInputSchema = z
  .object({
    endpoint: z.enum(faultEndpoints),
    mode: z.enum(faultModes),
    rate: z.number().min(0).max(1),
    status: z.number().int().min(100).max(599).optional(),
    delayMs: z.number().int().min(0).max(120_000).optional(),
    /** rate-limited: the Retry-After it sends (seconds); absent: 1. */
    retryAfterSeconds: z.number().int().min(0).max(3600).optional(),
    /** error-before-effect, error-after-effect: the code its body carries, in the service's shape; absent: a page. */
    code: z
      .string()
      .regex(/^[A-Za-z0-9_]{1,64}$/)
      .optional(),
  })
  .strict()
  .refine((rule) => rule.mode !== 'late-effect' || lateEffectEndpoints.includes(rule.endpoint), {
    message: `late-effect applies to ${lateEffectEndpoints.join(' and ')} only`,
    path: ['mode'],
  })
  .refine((rule) => rule.mode !== 'altered-answer' || alteredAnswerEndpoints.includes(rule.endpoint), {
    message: `altered-answer applies to ${alteredAnswerEndpoints.join(', ')} only`,
    path: ['mode'],
  })
  .refine((rule) => rule.code === undefined || codedErrorModes.includes(rule.mode), {
    message: `code applies to ${codedErrorModes.join(' and ')} only`,
    path: ['code'],
  });

export const faultConfigurationSchema = z
  .object({
    seed: z.number().int().optional(),
    rules: z.array(faultRuleInputSchema).max(100),
  })
  .strict();
export type FaultConfigurationInput = z.infer<typeof faultConfigurationSchema>;

/** A rule with its defaults filled in, as `PUT /_sandbox/faults` answers it. */
export interface FaultRule {
  endpoint: FaultEndpoint;
  mode: FaultMode;
  rate: number;
  status?: number;
  delayMs: number;
  retryAfterSeconds?: number;
  code?: string;
}

export interface FaultConfiguration {
  seed: number;
  rules: FaultRule[];
  /** The seeded generator: one draw per matching rule per request. */
  random: () => number;
}

const defaultStatus: Partial<Record<FaultMode, number>> = {
  'error-before-effect': 503,
  'error-after-effect': 502,
  'temporary-failure': 400,
  'rate-limited': 429,
  'late-effect': 504,
};

/** mulberry32: tiny, fast and good enough to make fault sequences reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fresh configuration; its generator restarts from the seed, so a run can be replayed. */
export function configureFaults(input: FaultConfigurationInput, defaultSeed: number): FaultConfiguration {
  const seed = input.seed ?? defaultSeed;
  const rules = input.rules.map((rule): FaultRule => {
    const status = rule.status ?? defaultStatus[rule.mode];
    return {
      endpoint: rule.endpoint,
      mode: rule.mode,
      rate: rule.rate,
      ...(status === undefined ? {} : { status }),
      delayMs: rule.delayMs ?? (rule.mode === 'latency' ? 1000 : rule.mode === 'late-effect' ? 5000 : 0),
      ...(rule.mode === 'rate-limited' ? { retryAfterSeconds: rule.retryAfterSeconds ?? 1 } : {}),
      ...(rule.code === undefined ? {} : { code: rule.code }),
    };
  });
  return { seed, rules, random: mulberry32(seed) };
}

export function describeFaults(configuration: FaultConfiguration): { seed: number; rules: FaultRule[] } {
  return { seed: configuration.seed, rules: configuration.rules };
}

interface FaultDecision {
  delayMs: number;
  /** The first non-latency rule that fired, if any. */
  fault: FaultRule | null;
}

function decide(configuration: FaultConfiguration, endpoint: FaultEndpoint): FaultDecision {
  let delayMs = 0;
  let fault: FaultRule | null = null;
  // Every matching rule draws, fired or not, so one rule's outcome never shifts another's draws.
  for (const rule of configuration.rules) {
    if (rule.endpoint !== endpoint) continue;
    const fires = configuration.random() < rule.rate;
    if (!fires) continue;
    if (rule.mode === 'latency') delayMs += rule.delayMs;
    else if (fault === null) {
      fault = rule;
      // A late effect's delay is the effect's, after the answer; every other fault's comes before it.
      if (rule.mode !== 'late-effect') delayMs += rule.delayMs;
    }
  }
  return { delayMs, fault };
}

/** Error bodies differ per service: OAuth style at connect, `{ code, message }` elsewhere. */
export type ErrorStyle = 'oauth' | 'service';

export interface FaultContext {
  faults(): FaultConfiguration;
  /** Aborted when the sandbox closes, so no delay outlives it. */
  shutdown: AbortSignal;
  lateEffects: LateEffects;
}

function gatewayPage(status: number): string {
  const reason = STATUS_CODES[status] ?? 'Error';
  return `<html><head><title>${status} ${reason}</title></head><body><center><h1>${status} ${reason}</h1></center><hr><center>sandbox-gateway</center></body></html>\n`;
}

/** A gateway's error: its page, or the service's error body carrying the rule's `code`. */
function sendGatewayError(
  res: Response,
  status: number,
  coded?: { code: string | undefined; style: ErrorStyle },
): void {
  if (coded?.code === undefined) {
    res.status(status).type('text/html').send(gatewayPage(status));
    return;
  }
  const message = `${status} ${STATUS_CODES[status] ?? 'Error'} (sandbox-gateway)`;
  res
    .status(status)
    .json(coded.style === 'oauth' ? { error: coded.code, error_description: message } : { code: coded.code, message });
}

function temporaryFailureBody(style: ErrorStyle): unknown {
  return style === 'oauth'
    ? { error: 'temporarily_unavailable', error_description: 'temporary failure (7011), try again' }
    : { code: '7011', message: 'Temporary failure, try again' };
}

function rateLimitedBody(style: ErrorStyle, seconds: number): unknown {
  const wait = `${seconds} second${seconds === 1 ? '' : 's'}`;
  return style === 'oauth'
    ? { error: 'temporarily_unavailable', error_description: `too many requests, retry after ${wait}` }
    : { code: 'RATE_LIMITED', message: `Too many requests, retry after ${wait}` };
}

/** Resolves when the caller has gone (socket closed) or the sandbox shuts down. */
function callerGone(res: Response, shutdown: AbortSignal): AbortSignal {
  // Not AbortSignal.any: on Node 20 it keeps every per-request signal tied to the long-lived
  // shutdown signal; here the listener is removed as soon as the request is over.
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (shutdown.aborted) abort();
  else shutdown.addEventListener('abort', abort, { once: true });
  res.once('close', () => {
    shutdown.removeEventListener('abort', abort);
    abort();
  });
  return controller.signal;
}

async function waitUntilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * The executes queued behind the slow gateway (late-effect): each takes effect when its delay is
 * up, or at once when released (`POST /_sandbox/faults/late-effects/release`, for a test that
 * has seen what it waited for); a closing sandbox cancels those still queued.
 */
export interface LateEffects {
  /**
   * Runs `effect` after `delayMs` whatever the caller does (it was already answered), unless it is
   * released first or the sandbox closes. Its answer goes nowhere: only its effect on the state counts.
   */
  schedule(delayMs: number, effect: () => Promise<unknown>): void;
  /** Applies every queued effect now; resolves with how many, once each has taken effect. */
  releaseAll(): Promise<number>;
}

export function createLateEffects(shutdown: AbortSignal): LateEffects {
  const queued = new Map<NodeJS.Timeout, () => Promise<unknown>>();
  const apply = (timer: NodeJS.Timeout) => {
    const effect = queued.get(timer);
    queued.delete(timer);
    clearTimeout(timer);
    return effect ? effect().catch(() => undefined) : Promise.resolve();
  };
  shutdown.addEventListener(
    'abort',
    () => {
      for (const timer of queued.keys()) clearTimeout(timer);
      queued.clear();
    },
    { once: true },
  );
  return {
    schedule(delayMs, effect) {
      if (shutdown.aborted) return;
      const timer: NodeJS.Timeout = setTimeout(() => void apply(timer), delayMs);
      queued.set(timer, effect);
    },
    async releaseAll() {
      const timers = [...queued.keys()];
      await Promise.all(timers.map(apply));
      return timers.length;
    },
  };
}

/** The answer as a faulty gateway passes it on: amounts ×10, another transfer or payment id (successes only). */
function altered(endpoint: FaultEndpoint, answer: EndpointAnswer): EndpointAnswer {
  if (answer.status >= 300 || typeof answer.body !== 'object' || answer.body === null) return answer;
  const body = { ...(answer.body as Record<string, unknown>) };
  const amount = body.amount as { currency: string; value: number } | undefined;
  if (endpoint === 'transfers.create' || endpoint === 'op.payments.create') {
    if (amount && typeof amount.value === 'number') body.amount = { ...amount, value: amount.value * 10 };
  } else if (typeof body.transferId === 'string') {
    body.transferId = randomUUID();
  } else if (endpoint === 'op.payments.execute' && typeof body.id === 'string') {
    body.id = randomUUID();
  }
  return { ...answer, body };
}

/** Wraps an endpoint handler with the configured faults of `endpoint`. */
export function withFaults(
  endpoint: FaultEndpoint,
  style: ErrorStyle,
  context: FaultContext,
  handler: EndpointHandler,
): RequestHandler {
  return async (req, res, next) => {
    try {
      const { delayMs, fault } = decide(context.faults(), endpoint);
      const gone = callerGone(res, context.shutdown);
      if (delayMs > 0) {
        try {
          await sleep(delayMs, undefined, { signal: gone });
        } catch {
          return; // the caller gave up or the sandbox closed during the delay: nothing to do
        }
      }
      switch (fault?.mode) {
        case 'error-before-effect':
          return sendGatewayError(res, fault.status ?? 503, { code: fault.code, style });
        case 'temporary-failure':
          return void res.status(fault.status ?? 400).json(temporaryFailureBody(style));
        case 'rate-limited':
          return void res
            .status(fault.status ?? 429)
            .set('Retry-After', String(fault.retryAfterSeconds ?? 1))
            .json(rateLimitedBody(style, fault.retryAfterSeconds ?? 1));
        case 'late-effect':
          sendGatewayError(res, fault.status ?? 504);
          context.lateEffects.schedule(fault.delayMs, () => runHandler(handler, req));
          return;
        default:
          break;
      }
      const answer = await runHandler(handler, req);
      switch (fault?.mode) {
        case 'error-after-effect':
          return sendGatewayError(res, fault.status ?? 502, { code: fault.code, style });
        case 'reset-after-effect': {
          // A TCP reset, so the caller sees ECONNRESET rather than a clean end of stream.
          const socket = req.socket;
          if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
          else socket.destroy();
          return;
        }
        case 'hang-after-effect':
          // No answer and no timer: the wait ends when the caller's socket closes or on close().
          await waitUntilAborted(gone);
          if (!res.headersSent && !res.destroyed) req.socket.destroy();
          return;
        case 'garbage-body':
          return void res.status(200).type('text/html').send('<html>upstream error');
        case 'altered-answer':
          return sendAnswer(res, altered(endpoint, answer));
        default:
          return sendAnswer(res, answer);
      }
    } catch (error) {
      next(error);
    }
  };
}
