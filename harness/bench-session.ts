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
  return {
    seconds: round1(seconds),
    pending,
    onboardedPerSecond: seconds > 0 ? round1((before - pending) / seconds) : 0,
  };
}

export interface LanderRun {
  /** Users who opened the landing page during the storm. */
  users: number;
  /** From the session URL call to the money page, for those users. */
  toMoneyPageMs: { p50: number; p99: number; max: number };
  /** Users who did not reach the money page within the wait (60 s). */
  notReached: number;
}

/**
 * The users who open the page while a storm runs: every `everyMs`, one more user's
 * tile is opened (a session URL call) and the user lands at once, then reloads the loading page
 * every 200 ms until the money page shows; each one's time from the session URL call to the money
 * page is kept. Runs until `stop` resolves, then waits for the users still landing.
 */
export async function runLanders(options: {
  apiBase: string;
  tokens: { accessToken: string; refreshToken: string; expiresAt: number };
  everyMs: number;
  stop: Promise<unknown>;
}): Promise<LanderRun> {
  const times: number[] = [];
  let notReached = 0;
  const land = async () => {
    const started = performance.now();
    const created = await fetch(`${options.apiBase}/embedded/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'request-reference-no': randomUUID() },
      body: JSON.stringify(options.tokens),
    });
    if (!created.ok) {
      notReached += 1;
      return;
    }
    const { sessionId } = (await created.json()) as { sessionId: string };
    let response = await fetch(`${options.apiBase}/app?sessionId=${sessionId}`, { redirect: 'manual' });
    const cookie = response.headers.getSetCookie()[0]?.split(';')[0];
    let page = await response.text();
    while (!page.includes('name="csrf"') && performance.now() - started < 60_000 && cookie) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      response = await fetch(`${options.apiBase}/app`, { redirect: 'manual', headers: { cookie } });
      page = await response.text();
    }
    if (page.includes('name="csrf"')) times.push(performance.now() - started);
    else notReached += 1;
  };
  const landing: Array<Promise<void>> = [];
  let stopped = false;
  void options.stop.finally(() => (stopped = true));
  while (!stopped) {
    landing.push(land().catch(() => void (notReached += 1)));
    await new Promise((resolve) => setTimeout(resolve, options.everyMs));
  }
  await Promise.all(landing);
  const sorted = [...times].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length ? round1(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!) : 0;
  return { users: times.length + notReached, toMoneyPageMs: { p50: at(50), p99: at(99), max: at(100) }, notReached };
}
