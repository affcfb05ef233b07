// The routes declare themselves (api/http/route-spec.ts) and are registered from their
// declarations: the app, built here with stand-in services (nothing is called while it is built),
// registers exactly the declared routes, method and path, and nothing else; every ops route
// declares its scope and ops-auth.ts enforces that one; the registration helper puts a handler
// where its declaration says and gives it the declared path parameters.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApp, type AppDependencies } from '../../api/app.ts';
import { allRoutes } from '../../api/docs/openapi.ts';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { expressPath, routesOn } from '../../api/http/route-registration.ts';
import { defineRoute, htmlAnswer } from '../../api/http/route-spec.ts';
import { createLogger } from '../../lib/logger.ts';

type Services = NonNullable<AppDependencies['services']>;

/** The app with every area mounted; its services are never called while it is built. */
function appWithEveryArea(): express.Express {
  return createApp({
    logger: createLogger({ level: 'silent' }),
    readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
    services: {
      database: {} as Services['database'],
      refreshPool: {} as Services['refreshPool'],
      tokens: {} as Services['tokens'],
      cipher: {} as Services['cipher'],
      fingerprintKey: Buffer.alloc(32),
      wallet: {} as Services['wallet'],
      temporal: {} as Services['temporal'],
      taskQueue: 'unused',
      onboarding: { wake() {}, async expedite() {} },
      opsApiKeys: ['k'.repeat(40)],
    },
  });
}

/** What a layer of Express 5's router (router 2.x) holds: a route, or a router mounted by use(). */
interface Layer {
  route?: {
    path: unknown;
    methods: Record<string, boolean | undefined>;
    stack: Array<{ method?: string; handle: { requiredScope?: string } }>;
  };
  handle?: { stack?: Layer[] };
  rawPath?: unknown;
  slash?: boolean;
}

/** Every registered route as `METHOD /express/path` (`ALL` for a router.all()). */
function registeredRoutes(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      return Object.entries(layer.route.methods)
        .filter(([, on]) => on)
        .map(([method]) => `${method === '_all' ? 'ALL' : method.toUpperCase()} ${prefix}${String(layer.route!.path)}`);
    }
    if (layer.handle?.stack)
      return registeredRoutes(layer.handle.stack, prefix + (layer.slash ? '' : String(layer.rawPath)));
    return [];
  });
}

describe('the route declarations', () => {
  it('are what the app registers, method and path, and nothing else', () => {
    // The console's pages are declared too (not in the API's document); its home is its mount's root.
    const registered = registeredRoutes((appWithEveryArea().router as unknown as { stack: Layer[] }).stack).map(
      (route) => route.replace(/^(\w+ \/console)\/$/, '$1'),
    );
    const declared = [...allRoutes, ...consoleRoutes].map(
      (route) => `${route.method.toUpperCase()} ${expressPath(route.path)}`,
    );
    expect(declared.length).toBeGreaterThan(30);
    expect(new Set(declared).size).toBe(declared.length);
    expect(registered.filter((route) => !route.startsWith('ALL ')).sort()).toEqual([...declared].sort());
    // A method-not-allowed catch-all answers on a declared path only.
    const declaredPaths = new Set([...allRoutes, ...consoleRoutes].map((route) => expressPath(route.path)));
    for (const route of registered.filter((entry) => entry.startsWith('ALL ')))
      expect(declaredPaths).toContain(route.slice(4));
  });

  it('give every ops route its scope, checked first by the route itself, and no other route one', () => {
    /** `METHOD /path` → the scope its first handler checks (undefined: it checks none). */
    const checks = new Map<string, string | undefined>();
    const walk = (stack: Layer[], prefix: string) => {
      for (const layer of stack) {
        if (layer.route) {
          for (const [method, on] of Object.entries(layer.route.methods)) {
            if (!on || method === '_all') continue;
            const first = layer.route.stack.find((entry) => entry.method === undefined || entry.method === method);
            checks.set(`${method.toUpperCase()} ${prefix}${String(layer.route.path)}`, first?.handle.requiredScope);
          }
        } else if (layer.handle?.stack) walk(layer.handle.stack, prefix + (layer.slash ? '' : String(layer.rawPath)));
      }
    };
    walk((appWithEveryArea().router as unknown as { stack: Layer[] }).stack, '');
    const ops = allRoutes.filter((route) => route.path.startsWith('/ops/'));
    expect(ops.length).toBeGreaterThan(25);
    for (const route of allRoutes) {
      const scope = typeof route.access === 'object' && 'opsScope' in route.access ? route.access.opsScope : undefined;
      expect(scope !== undefined, `${route.method} ${route.path}`).toBe(route.path.startsWith('/ops/'));
      const registered = `${route.method.toUpperCase()} ${expressPath(route.path)}`;
      expect(checks.has(registered), registered).toBe(true);
      expect(checks.get(registered), `${registered}: its first handler checks its scope`).toBe(scope);
    }
    // The console's pages: each its declared scope first (none: any person signed in).
    for (const route of consoleRoutes) {
      expect(typeof route.access === 'object' && 'consoleScope' in route.access, `${route.method} ${route.path}`).toBe(
        true,
      );
      const scope =
        typeof route.access === 'object' && 'consoleScope' in route.access
          ? (route.access.consoleScope ?? undefined)
          : undefined;
      const registered = `${route.method.toUpperCase()} ${route.path === '/console' ? '/console/' : expressPath(route.path)}`;
      expect(checks.has(registered), registered).toBe(true);
      expect(checks.get(registered), `${registered}: its first handler checks its scope`).toBe(scope);
    }
  });

  it('give every console page and stream a scope: only signing in and out are open to whoever asks (and a HEAD of the provider’s answer, refused)', () => {
    const open = consoleRoutes.filter(
      (route) =>
        typeof route.access === 'object' && 'consoleScope' in route.access && route.access.consoleScope === null,
    );
    expect(open.map((route) => `${route.method.toUpperCase()} ${route.path}`).sort()).toEqual([
      'GET /console/oidc/callback',
      'GET /console/sign-in',
      'GET /console/sign-in/oidc',
      'HEAD /console/oidc/callback',
      'POST /console/sign-in',
      'POST /console/sign-out',
    ]);
  });

  it('name every path parameter of a route, checked as they are written', () => {
    // @ts-expect-error `{id}` has no declared parameter
    defineRoute({
      method: 'get',
      path: '/things/{id}',
      operationId: 'getThing',
      tag: 'docs',
      summary: '',
      access: 'public',
      responses: {},
    });
    defineRoute({
      method: 'get',
      path: '/things/{id}',
      operationId: 'getThing',
      tag: 'docs',
      summary: '',
      access: 'public',
      // @ts-expect-error `thingId` is not a parameter of the path
      params: { thingId: { schema: z.string(), description: 'a thing' } },
      responses: {},
    });
  });
});

describe('routesOn', () => {
  const thing = defineRoute({
    method: 'get',
    path: '/v1/things/{thingId}',
    operationId: 'getThing',
    tag: 'docs',
    summary: 'a thing',
    access: 'public',
    params: { thingId: { schema: z.string(), description: 'the thing' } },
    responses: { '200': htmlAnswer('the thing') },
  });

  it('registers the declared method and path under the router’s mount path, with the declared parameters', async () => {
    const router = express.Router();
    routesOn(router, '/v1')(thing, (req, res) => {
      res.json({ thingId: req.params.thingId });
    });
    const app = express().use('/v1', router);
    const server: Server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const answer = await fetch(`${base}/v1/things/t-1`);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ thingId: 't-1' });
      expect((await fetch(`${base}/v1/things/t-1`, { method: 'POST' })).status).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a declaration outside its mount path (at start-up, not at the first request)', () => {
    expect(() => routesOn(express.Router(), '/ops')(thing, (_req, res) => res.end())).toThrow(/not under \/ops\//);
  });
});
