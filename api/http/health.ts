// Liveness and readiness. /healthz says the process answers; /readyz checks PostgreSQL, Temporal
// and the wallet service, each with a time limit, and answers 503 when any is down. /readyz is
// public and cheap to call, so it answers from a result at most READINESS_MAX_AGE_MS old and runs
// one round of checks at a time: a flood of it never becomes a flood of calls to the wallet operator.
import type { Router } from 'express';
import { z } from 'zod';
import { routesOn, strictRouter } from './route-registration.ts';
import { defineRoute, jsonAnswer, named, type AnyRouteSpec } from './route-spec.ts';

export type ReadinessCheck = () => Promise<void>;

export interface ReadinessChecks {
  postgres: ReadinessCheck;
  temporal: ReadinessCheck;
  walletService: ReadinessCheck;
}

/** GET /healthz: the process answers. */
export const livenessSchema = z.object({ status: z.literal('ok') });

const checkResultSchema = z.object({
  status: z.enum(['up', 'down']),
  latencyMs: z.number().int().nonnegative(),
  /** Why a check is down (a host, a time-out); never a credential. */
  error: z.string().optional(),
});
type CheckResult = z.infer<typeof checkResultSchema>;

/** GET /readyz: 200 `ready` when every dependency is up, else 503 `not-ready`. */
export const readinessSchema = z.object({
  status: z.enum(['ready', 'not-ready']),
  checks: z.object({ postgres: checkResultSchema, temporal: checkResultSchema, walletService: checkResultSchema }),
});
type Readiness = z.infer<typeof readinessSchema>;

const readinessComponent = named('Readiness', readinessSchema);

const routes = {
  liveness: defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'liveness',
    tag: 'health',
    summary: 'Liveness: the process answers',
    access: 'public',
    responses: { '200': jsonAnswer(named('Liveness', livenessSchema), 'alive') },
  }),
  readiness: defineRoute({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    tag: 'health',
    summary: 'Readiness: PostgreSQL, Temporal and the wallet service, each checked with a 3 s limit',
    access: 'public',
    responses: {
      '200': jsonAnswer(readinessComponent, 'every dependency is up'),
      '503': jsonAnswer(readinessComponent, 'a dependency is down (its `error` says why)'),
    },
  }),
};

/** The health routes, as the document lists them. */
export const healthRoutes: readonly AnyRouteSpec[] = Object.values(routes);

const CHECK_TIMEOUT_MS = 3000;
/** How old a readiness answer may be. */
export const READINESS_MAX_AGE_MS = 5000;

const CHECK_TIMED_OUT = 'readiness check timed out';

async function runCheck(check: ReadinessCheck, onDown?: (error: Error) => void): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(CHECK_TIMED_OUT)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    // Which dependency, not its error's text: that names internal hosts and ports.
    // The text goes to the API's log instead.
    const timedOut = (error as Error).message === CHECK_TIMED_OUT;
    onDown?.(error as Error);
    return {
      status: 'down',
      latencyMs: Math.round(performance.now() - started),
      error: timedOut ? `no answer within ${CHECK_TIMEOUT_MS} ms` : 'the check failed (its error is in the API log)',
    };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRouter(
  checks: ReadinessChecks,
  options: { maxAgeMs?: number; now?: () => number; onDown?: (dependency: string, error: Error) => void } = {},
): Router {
  const maxAgeMs = options.maxAgeMs ?? READINESS_MAX_AGE_MS;
  const now = options.now ?? Date.now;
  let latest: { at: number; result: Promise<Readiness> } | undefined;
  const readiness = (): Promise<Readiness> => {
    // Shared while it runs (started at `at`) and for maxAgeMs after.
    if (latest && now() - latest.at < maxAgeMs) return latest.result;
    const at = now();
    const result = (async (): Promise<Readiness> => {
      const down = (dependency: string) => (error: Error) => options.onDown?.(dependency, error);
      const [postgres, temporal, walletService] = await Promise.all([
        runCheck(checks.postgres, down('postgres')),
        runCheck(checks.temporal, down('temporal')),
        runCheck(checks.walletService, down('walletService')),
      ]);
      const ready = postgres.status === 'up' && temporal.status === 'up' && walletService.status === 'up';
      return { status: ready ? 'ready' : 'not-ready', checks: { postgres, temporal, walletService } };
    })();
    latest = { at, result };
    // The age counts from when the answer came, so a slow round is still reused for maxAgeMs.
    void result.then(() => {
      if (latest?.result === result) latest = { at: now(), result };
    });
    return result;
  };
  const router = strictRouter();
  const add = routesOn(router);
  add(routes.liveness, (_req, res) => {
    res.json({ status: 'ok' } satisfies z.infer<typeof livenessSchema>);
  });
  add(routes.readiness, async (_req, res) => {
    const body = await readiness();
    res.setHeader('Cache-Control', 'no-store');
    res.status(body.status === 'ready' ? 200 : 503).json(body);
  });
  return router;
}
