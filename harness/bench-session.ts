// The session URL alone (POST /embedded/session) under a fixed load with autocannon: what the
// wallet service sees when many users open the partner's tile at once. One sandbox-minted token set
// is sent on every call (the session URL stores each call as a new session), each with a fresh
// Request-Reference-No as the wallet service sends them.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import type { Database } from '../lib/database.ts';
import { round1 } from './bench-load.ts';

export interface SessionRun {
  connections: number;
  seconds: number;
  /** Answered 2xx per second over the run. */
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number };
  /** Answers other than 2xx, and connection errors or time-outs. */
  non2xx: number;
  errors: number;
}

export async function runSessionLoad(options: {
  sessionUrl: string;
  tokens: { accessToken: string; refreshToken: string; expiresAt: number };
  connections: number;
  seconds: number;
}): Promise<SessionRun> {
  const body = JSON.stringify(options.tokens);
  const result = await autocannon({
    url: options.sessionUrl,
    connections: options.connections,
    duration: options.seconds,
    requests: [
      {
        method: 'POST',
        body,
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, 'content-type': 'application/json', 'request-reference-no': randomUUID() },
        }),
      },
    ],
  });
  return {
    connections: options.connections,
    seconds: round1(result.duration),
    requestsPerSecond: round1(result['2xx'] / result.duration),
    latencyMs: { p50: round1(result.latency.p50), p99: round1(result.latency.p99) },
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

export interface OnboardingDrain {
  /** Seconds waited: until none was left PENDING, or the time limit. */
  seconds: number;
  /** Sessions still PENDING when the wait ended (0: all onboarded). */
  pending: number;
  /** Sessions onboarded (READY or FAILED) per second over the wait: the worker's onboarding rate. */
  onboardedPerSecond: number;
}

/**
 * Waits until the worker has onboarded every session stored (none left PENDING: the bench's
 * database holds only its own), polled each second, for at most `timeoutMs`.
 */
export async function waitForOnboardings(database: Database, timeoutMs = 120_000): Promise<OnboardingDrain> {
  const pendingNow = () => database.embeddedSession.count({ where: { status: 'PENDING' } });
  const started = Date.now();
  const before = await pendingNow();
  let pending = before;
  while (pending > 0 && Date.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    pending = await pendingNow();
  }
  const seconds = (Date.now() - started) / 1000;
  return { seconds: round1(seconds), pending, onboardedPerSecond: seconds > 0 ? round1((before - pending) / seconds) : 0 };
}
