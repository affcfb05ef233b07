// /healthz and /readyz against real PostgreSQL, Temporal and the sandbox; and 503 naming the
// dependency that is down.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApp } from '../../api/app.ts';
import { createDatabase, pingDatabase, type Database } from '../../lib/database.ts';
import { createLogger } from '../../lib/logger.ts';
import { findFreePort } from '../../stack/ports.ts';
import { connectTemporal, pingTemporal, type TemporalHandle } from '../../lib/temporal.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { checkWalletServiceReachable } from '../../wallet/reachability.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

let database: Database;
let temporal: TemporalHandle;
let deadTemporal: TemporalHandle;
let sandbox: RunningSandbox;
const servers: Server[] = [];
const namespace = inject('temporalNamespace');

async function serve(deps: Parameters<typeof createApp>[0]): Promise<string> {
  const server = createApp(deps).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  database = createDatabase(testDatabaseUrl());
  temporal = connectTemporal(inject('temporalAddress'), namespace);
  deadTemporal = connectTemporal(`127.0.0.1:${await findFreePort()}`, namespace);
  sandbox = await startSandbox({ port: 0 });
});

afterAll(async () => {
  for (const server of servers) server.close();
  await Promise.allSettled([database.$disconnect(), temporal.close(), deadTemporal.close(), sandbox.close()]);
});

describe('health endpoints', () => {
  it('answer ready when PostgreSQL, Temporal and the wallet service are up', async () => {
    const base = await serve({
      logger: createLogger({ level: 'silent' }),
      readiness: {
        postgres: () => pingDatabase(database),
        temporal: () => pingTemporal(temporal, namespace),
        walletService: () => checkWalletServiceReachable(sandbox),
      },
    });
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${base}/readyz`);
    const body = (await ready.json()) as { status: string; checks: Record<string, { status: string }> };
    expect(ready.status, JSON.stringify(body)).toBe(200);
    expect(body.status).toBe('ready');
    expect(Object.fromEntries(Object.entries(body.checks).map(([name, check]) => [name, check.status]))).toEqual({
      postgres: 'up',
      temporal: 'up',
      walletService: 'up',
    });
  });

  it('answer 503 naming each dependency that is down', async () => {
    const closedPort = await findFreePort();
    const base = await serve({
      logger: createLogger({ level: 'silent' }),
      readiness: {
        postgres: () => pingDatabase(database),
        temporal: () => pingTemporal(deadTemporal, namespace, 1000),
        walletService: () =>
          checkWalletServiceReachable({
            connectUrl: `http://127.0.0.1:${closedPort}/connect`,
            opUrl: `http://127.0.0.1:${closedPort}/op`,
            transferUrl: `http://127.0.0.1:${closedPort}/v1`,
          }),
      },
    });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { status: string; checks: Record<string, { status: string; error?: string }> };
    expect(body.status).toBe('not-ready');
    expect(body.checks.postgres?.status).toBe('up');
    expect(body.checks.temporal?.status).toBe('down');
    expect(body.checks.walletService?.status).toBe('down');
    // Which dependency is down, never its error's text: no internal host or port.
    expect(body.checks.walletService?.error).toBe('the check failed (its error is in the API log)');
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
    expect(JSON.stringify(body)).not.toContain(String(closedPort));
  });

  it('/readyz answers a flood from one round of checks at most a few seconds old: the wallet service is not called per request', async () => {
    let walletChecks = 0;
    const base = await serve({
      logger: createLogger({ level: 'silent' }),
      readiness: {
        postgres: async () => {},
        temporal: async () => {},
        walletService: async () => {
          walletChecks += 1;
          await new Promise((resolve) => setTimeout(resolve, 50));
        },
      },
    });
    const began = Date.now();
    const answers = await Promise.all(Array.from({ length: 200 }, () => fetch(`${base}/readyz`)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    for (let i = 0; i < 50; i += 1) expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // One round per READINESS_MAX_AGE_MS of the flood (one, unless a busy machine stretched it past 5 s): never one
    // per request.
    const { READINESS_MAX_AGE_MS } = await import('../../api/http/health.ts');
    expect(walletChecks).toBeGreaterThanOrEqual(1);
    expect(walletChecks).toBeLessThanOrEqual(1 + Math.floor((Date.now() - began) / READINESS_MAX_AGE_MS));
  });

  it('/readyz checks again once its answer is older than its limit', async () => {
    let clock = 1_000_000;
    let down = false;
    const { healthRouter, READINESS_MAX_AGE_MS } = await import('../../api/http/health.ts');
    const express = (await import('express')).default;
    const app = express();
    app.use(
      healthRouter(
        {
          postgres: async () => {},
          temporal: async () => {},
          walletService: async () => {
            if (down) throw new Error('wallet unreachable');
          },
        },
        { now: () => clock },
      ),
    );
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    down = true;
    clock += READINESS_MAX_AGE_MS - 1;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    clock += 2;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
  });

  it('answers unknown routes with problem details', async () => {
    const base = await serve({
      logger: createLogger({ level: 'silent' }),
      readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
    });
    const response = await fetch(`${base}/nope`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await response.json()).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('GET /metrics with METRICS_TOKEN set answers only to that bearer; without one it stays open', async () => {
    const token = 'metrics-token-'.repeat(3);
    const readiness = { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} };
    const guarded = await serve({ logger: createLogger({ level: 'silent' }), readiness, metricsToken: token });
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`, token]) {
      const response = await fetch(`${guarded}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(response.status, String(authorization)).toBe(401);
      expect(await response.text()).not.toContain('walletflow_');
    }
    const allowed = await fetch(`${guarded}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('# HELP');
    const open = await serve({ logger: createLogger({ level: 'silent' }), readiness });
    expect((await fetch(`${open}/metrics`)).status).toBe(200);
  });
});
