// The API documentation against the running API: the document is valid OpenAPI 3.1, it names
// exactly the routes the Express app has (walked from its router stack), /docs serves the viewer
// from this origin under a CSP that lets it run, and real answers match the documented schemas.
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
let document: Record<string, unknown>;
let validation: Awaited<ReturnType<Validator['validate']>>;
let validator: Validator;
/** The document with every $ref inlined. */
let resolved: OpenApi;

interface OpenApi {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
}

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
  const response = await fetch(`${stack.apiBase}/docs/openapi.json`);
  expect(response.status).toBe(200);
  document = (await response.json()) as Record<string, unknown>;
  validator = new Validator();
  validation = await validator.validate(document);
  resolved = validator.resolveRefs() as unknown as OpenApi;
});
afterAll(async () => {
  await stack.close();
});

// ---- the app's routes, from Express 5's router stack ------------------------------------------

/** What a layer of Express 5's router (router 2.x) holds: a route, or a router mounted by use(). */
interface Layer {
  route?: { path: unknown; methods: Record<string, boolean | undefined> };
  handle?: { stack?: Layer[] };
  rawPath?: unknown;
  /** use() without a path, or with '/'. */
  slash?: boolean;
}

const operationMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `/ops/fundings/:fundingId` as OpenAPI writes it; other Express path syntax fails the test. */
function openApiPath(expressPath: string): string {
  expect(expressPath, `route path ${expressPath}: only :name parameters are mapped`).not.toMatch(/[*?{}()]/);
  return expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/**
 * Every route as `METHOD path`; `router.all()` routes (a 405 for the methods a path does not take)
 * come back as `ALL path`. Plain middleware (rate limits, 404 answers, static files) is not a route.
 */
function appRoutes(stack: Layer[], prefix = ''): string[] {
  const routes: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? (layer.route.path as unknown[]) : [layer.route.path];
      for (const path of paths) {
        expect(typeof path, `a route path under ${prefix || '/'} is not a string`).toBe('string');
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (on)
            routes.push(`${method === '_all' ? 'ALL' : method.toUpperCase()} ${openApiPath(prefix + String(path))}`);
        }
      }
    } else if (layer.handle?.stack) {
      const mount = layer.slash ? '' : layer.rawPath;
      expect(typeof mount, `a router mounted under ${prefix || '/'} at a path that is not a string`).toBe('string');
      routes.push(...appRoutes(layer.handle.stack, prefix + String(mount)));
    }
  }
  return routes;
}

function documentedOperations(): string[] {
  const paths = document.paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, item]) =>
    operationMethods.filter((method) => item[method] !== undefined).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

// ---- documented schemas as validators --------------------------------------------------------

/** The documented schema of an answer, as a zod validator (converted back from the JSON Schema). */
function documentedAnswer(path: string, method: string, status: number, mediaType = 'application/json'): z.ZodType {
  const schema = resolved.paths[path]?.[method]?.responses[String(status)]?.content?.[mediaType]?.schema;
  expect(schema, `${method.toUpperCase()} ${path} documents no ${status} ${mediaType} answer`).toBeDefined();
  return z.fromJSONSchema(schema as z.core.JSONSchema.JSONSchema);
}

/** Polls a GET until `done`, checking every answer against the documentation. */
async function pollDocumented<T>(url: string, path: string, done: (body: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const body = (await expectDocumented(await stack.opsFetch(url), path, 'get')) as T;
    if (done(body) || Date.now() > deadline) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function expectDocumented(response: Response, path: string, method: string): Promise<unknown> {
  const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const body: unknown = await response.json();
  const result = documentedAnswer(path, method, response.status, mediaType).safeParse(body);
  expect(
    result.success,
    `${method.toUpperCase()} ${path} ${response.status}: ${result.error?.message}\n${JSON.stringify(body)}`,
  ).toBe(true);
  return body;
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', () => {
    expect(validation.errors ?? []).toEqual([]);
    expect(validation.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents every route of the app with its method, and nothing the app does not have', () => {
    const registered = appRoutes((stack.app.router as unknown as { stack: Layer[] }).stack);
    const documented = documentedOperations();
    // The walk found the areas (a broken walk must not pass by finding nothing).
    for (const route of [
      'GET /healthz',
      'GET /metrics',
      'POST /embedded/session',
      'GET /app',
      'POST /ops/fundings',
      'DELETE /ops/links/{linkId}',
    ]) {
      expect(registered).toContain(route);
    }
    // The console's pages (/console) are people's pages, not operations of this document.
    const operations = registered.filter((route) => !route.startsWith('ALL ') && !/^\w+ \/console(\/|$)/.test(route));
    expect([...new Set(documented)].sort()).toEqual([...new Set(operations)].sort());
    expect(documented.length).toBe(new Set(documented).size);
    // A method-not-allowed catch-all answers on a documented path.
    const documentedPaths = new Set(documented.map((operation) => operation.split(' ')[1]));
    for (const route of registered.filter((entry) => entry.startsWith('ALL ')))
      expect(documentedPaths).toContain(route.slice(4));
  });

  it('puts every ops operation behind the bearer key, with the Idempotency-Key header where a request starts one', () => {
    const paths = document.paths as Record<
      string,
      Record<string, { security?: unknown; parameters?: Array<{ name: string; in: string; required: boolean }> }>
    >;
    for (const [path, item] of Object.entries(paths).filter(([path]) => path.startsWith('/ops/'))) {
      for (const method of operationMethods) {
        const operation = item[method];
        if (!operation) continue;
        expect(operation.security, `${method} ${path}`).toEqual([{ opsApiKey: [] }]);
      }
    }
    for (const path of ['/ops/fundings', '/ops/payments']) {
      expect(paths[path]?.post?.parameters).toContainEqual(
        expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: true }),
      );
    }
  });
});

describe('/docs', () => {
  it('serves the viewer from this origin, under a CSP that lets it run and no inline script', async () => {
    const response = await fetch(`${stack.apiBase}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await response.text();
    expect(html).toContain('<div id="swagger-ui"></div>');
    // Every script is a file of this origin: nothing inline, nothing from a CDN.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets).toEqual(
      expect.arrayContaining([
        '/docs/assets/swagger-ui-bundle.js',
        '/docs/assets/init.js',
        '/docs/assets/swagger-ui.css',
      ]),
    );
    for (const asset of assets) {
      expect(asset).toMatch(/^\/docs\//);
      const file = await fetch(`${stack.apiBase}${asset}`);
      expect(file.status, asset).toBe(200);
      const body = await file.text();
      if (asset.endsWith('.js')) expect(file.headers.get('content-type')).toMatch(/javascript/);
      if (asset.endsWith('init.js')) expect(body).toContain('/docs/openapi.json');
    }
  });

  it('serves the document, and nothing of swagger-ui-dist but the viewer’s files', async () => {
    const response = await fetch(`${stack.apiBase}/docs/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await response.json()) as { openapi: string }).openapi).toBe('3.1.0');
    // The package's own index.html loads a remote example document.
    for (const path of [
      '/docs/assets/index.html',
      '/docs/assets/swagger-initializer.js',
      '/docs/assets/package.json',
      '/docs/assets/%2e%2e/package.json',
    ]) {
      expect((await fetch(`${stack.apiBase}${path}`)).status, path).toBe(404);
    }
  });

  it('leaves the deny-all CSP on every other answer', async () => {
    for (const path of ['/healthz', '/docs/openapi.json', '/ops/fundings']) {
      const csp = (await fetch(`${stack.apiBase}${path}`)).headers.get('content-security-policy');
      expect(csp, path).toMatch(/^default-src 'none'/);
    }
  });
});

describe('real answers match the documented schemas', () => {
  it('health', async () => {
    await expectDocumented(await fetch(`${stack.apiBase}/healthz`), '/healthz', 'get');
    await expectDocumented(await fetch(`${stack.apiBase}/readyz`), '/readyz', 'get');
  });

  it('a funding: created, read back when final, listed; and the problem documents', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '100.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const created = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '10.50' } }),
    });
    expect(created.status).toBe(202);
    const { fundingId } = (await expectDocumented(created, '/ops/fundings', 'post')) as { fundingId: string };

    const funding = await pollDocumented<{ status: string; events: unknown[] }>(
      `/ops/fundings/${fundingId}`,
      '/ops/fundings/{fundingId}',
      (body) => body.status === 'APPROVED',
    );
    expect(funding.status).toBe('APPROVED');
    expect(funding.events.length).toBeGreaterThan(1);

    await expectDocumented(await stack.opsFetch('/ops/fundings?limit=2'), '/ops/fundings', 'get');
    await expectDocumented(await stack.opsFetch(`/ops/fundings/${randomUUID()}`), '/ops/fundings/{fundingId}', 'get');
    const invalid = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code: '12' }, amount: { currency: 'PHP', value: '-1' } }),
    });
    expect(invalid.status).toBe(400);
    await expectDocumented(invalid, '/ops/fundings', 'post');
    const unauthorized = await fetch(`${stack.apiBase}/ops/payments`);
    expect(unauthorized.status).toBe(401);
    await expectDocumented(unauthorized, '/ops/payments', 'get');
    await expectDocumented(await stack.opsFetch('/ops/links/not-a-uuid'), '/ops/links/{linkId}', 'get');
  });

  it('a link, its wallet profile (every scope), a payment from it, and the link unlinked', async () => {
    const { linkId } = await createEmbeddedLink(
      stack,
      { kycLevel: 'KYC1', balance: '100.00' },
      { scopes: stack.sandbox.partner.scopes },
    );
    await expectDocumented(await stack.opsFetch(`/ops/links/${linkId}`), '/ops/links/{linkId}', 'get');
    const profileAnswer = await stack.opsFetch(`/ops/links/${linkId}/profile`);
    expect(profileAnswer.status).toBe(200);
    const profile = (await expectDocumented(profileAnswer, '/ops/links/{linkId}/profile', 'get')) as {
      scopes: string[];
    };
    expect(profile.scopes).toHaveLength(6);

    const created = await stack.opsFetch('/ops/payments', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ linkId, amount: { currency: 'PHP', value: '5.00' } }),
    });
    expect(created.status).toBe(202);
    const { id } = (await expectDocumented(created, '/ops/payments', 'post')) as { id: string };
    const payment = await pollDocumented<{ status: string }>(
      `/ops/payments/${id}`,
      '/ops/payments/{paymentId}',
      (body) => body.status === 'SUCCEEDED',
    );
    expect(payment.status).toBe('SUCCEEDED');
    await expectDocumented(await stack.opsFetch('/ops/payments?status=SUCCEEDED&limit=1'), '/ops/payments', 'get');

    const unlinked = await stack.opsFetch(`/ops/links/${linkId}`, { method: 'DELETE' });
    expect(unlinked.status).toBe(200);
    expect(await expectDocumented(unlinked, '/ops/links/{linkId}', 'delete')).toMatchObject({
      status: 'UNLINKED',
      tokens: null,
    });
  });

  it('the session URL’s refusal and the landing page’s poll', async () => {
    const refused = await fetch(`${stack.apiBase}/embedded/session`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(refused.status).toBe(400);
    await expectDocumented(refused, '/embedded/session', 'post');
    const noSession = await fetch(`${stack.apiBase}/app/status`);
    expect(noSession.status).toBe(401);
    await expectDocumented(noSession, '/app/status', 'get');
  });
});
