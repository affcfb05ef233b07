// Liveness and readiness. /healthz says the process answers; /readyz checks PostgreSQL, Temporal
// and the wallet service, each with a time limit, and answers 503 when any is down.
import { Router } from 'express';

export type ReadinessCheck = () => Promise<void>;

export interface ReadinessChecks {
  postgres: ReadinessCheck;
  temporal: ReadinessCheck;
  walletService: ReadinessCheck;
}

interface CheckResult {
  status: 'up' | 'down';
  latencyMs: number;
  error?: string;
}

const CHECK_TIMEOUT_MS = 3000;

async function runCheck(check: ReadinessCheck): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    // The message names what failed (a host, a timeout); checks never put credentials in errors.
    return { status: 'down', latencyMs: Math.round(performance.now() - started), error: (error as Error).message.slice(0, 300) };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRouter(checks: ReadinessChecks): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [postgres, temporal, walletService] = await Promise.all([
      runCheck(checks.postgres),
      runCheck(checks.temporal),
      runCheck(checks.walletService),
    ]);
    const ready = postgres.status === 'up' && temporal.status === 'up' && walletService.status === 'up';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not-ready', checks: { postgres, temporal, walletService } });
  });
  return router;
}
