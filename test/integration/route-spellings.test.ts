// A scope is decided by the route that runs (contract-decisions section 12; docs/architecture.md,
// invariant 12): every ops route, called by a key holding every scope but the one the route needs,
// in its own spelling and in the spellings Express once matched too (upper case, mixed case, a
// trailing slash, a doubled slash, percent-encoded letters), and with a method-override header.
// The own spelling is refused 403 SCOPE_REQUIRED; every other spelling is 404 NOT_FOUND, answered
// by no handler. Nothing is stored (every table but the audit is as it was), and every write
// leaves an audit row with the refusal and the key's name.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsRoutes } from '../../api/ops/ops-routes.ts';
import { opsScopes, type OpsScope } from '../../lib/ops-keys.ts';
import { rawHttp } from '../support/raw-http.ts';
import { waitFor } from '../support/wait-for.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { saveStandaloneLink } from '../support/standalone-link.ts';

let stack: PartnerStack;
/** A key per scope holding every other scope: the strongest key that must still be refused. */
const allBut = new Map<OpsScope, string>(opsScopes.map((scope) => [scope, randomBytes(24).toString('base64url')]));
const keyName = (scope: OpsScope) => `all-but-${scope}`;
const ids: Record<string, string> = {};

beforeAll(async () => {
  stack = await startPartnerStack({
    extraOpsKeys: [...allBut].map(
      ([scope, key]) => `${keyName(scope)}:${opsScopes.filter((other) => other !== scope).join('+')}:${key}`,
    ),
    // Every batch waits for a second key's approval.
    batches: { approvalThreshold: 1n, maxInFlight: 4 },
  });
  // Real targets, so a handler that ran would change something: a batch awaiting approval (by the
  // stack's own key), a funding, a link, a webhook endpoint.
  const batch = await stack.opsFetch('/ops/funding-batches', {
    method: 'POST',
    headers: { 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'spellings',
      items: [
        { reference: 'r1', recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '1.00' } },
      ],
    }),
  });
  expect(batch.status).toBe(202);
  ids.batchId = ((await batch.json()) as { batchId: string }).batchId;
  const funding = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
    body: JSON.stringify({ recipient: { type: 'CODE', code: '7654321' }, amount: { currency: 'PHP', value: '2.00' } }),
  });
  expect(funding.status).toBe(202);
  ids.fundingId = ((await funding.json()) as { fundingId: string }).fundingId;
  const user = await stack.admin.createUser();
  ids.linkId = (await saveStandaloneLink(stack, user, `spellings-${randomUUID()}`, 600_000)).linkId;
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

/** A concrete path for a route's template: the real targets where the route names one. */
function concrete(template: string): string {
  return template.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    if (name === 'batchId') return ids.batchId!;
    if (name === 'fundingId') return ids.fundingId!;
    if (name === 'linkId') return ids.linkId!;
    if (name === 'partnerUserId') return 'TREASURY';
    if (name === 'date') return '2026-11-24';
    return randomUUID();
  });
}

/** The other spellings of a path: each must reach no handler. */
function otherSpellings(path: string): Array<[string, string]> {
  const segments = path.split('/');
  const last = segments.length - 1;
  // The last segment made only of letters and hyphens (a route's own word, not an id), else the first after /ops.
  const wordAt = /^[a-z-]+$/.test(segments[last]!) ? last : 2;
  const word = segments[wordAt]!;
  const encoded = (upperHex: boolean) => {
    const copy = [...segments];
    const hex = word.charCodeAt(0).toString(16);
    copy[wordAt] = `%${upperHex ? hex.toUpperCase() : hex}${word.slice(1)}`;
    return copy.join('/');
  };
  const mixed = segments
    .map((segment, index) =>
      index === wordAt ? [...segment].map((char, at) => (at % 2 === 0 ? char.toUpperCase() : char)).join('') : segment,
    )
    .join('/');
  return [
    ['upper case', path.toUpperCase()],
    [
      'the route word in upper case',
      segments.map((segment, index) => (index === wordAt ? segment.toUpperCase() : segment)).join('/'),
    ],
    ['mixed case', mixed],
    ['the mount in upper case', path.replace(/^\/ops/, '/OPS')],
    ['a trailing slash', `${path}/`],
    ['a doubled slash', path.replace(/^\/ops\//, '/ops//')],
    ['a doubled slash inside', `${segments.slice(0, last).join('/')}//${segments[last]}`],
    ['a percent-encoded letter (lower-case hex)', encoded(false)],
    ['a percent-encoded letter (upper-case hex)', encoded(true)],
    // Found by a read: the audit's test of the mount decoded the first segment alone, so `/ops%2Ffundings` (one
    // segment, `ops/fundings` decoded) was no ops path: a write so spelled reached the app's 404 unaudited.
    ['its slashes percent-encoded', `/${segments.slice(1).join('%2F')}`],
    ['its slashes percent-encoded twice', `/${segments.slice(1).join('%252f')}`],
    // A second read's finding: decoding the whole path at once, a stray `%` anywhere left the mount undecoded.
    ['its mount percent-encoded, a stray percent after it', `${path.replace(/^\/ops/, '/%6Fps')}%`],
  ];
}

const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Every table's rows but the audit's, as one digest per table. */
async function storedState(): Promise<Record<string, string>> {
  const tables = await stack.database.$queryRaw<Array<{ name: string }>>`
    SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename NOT IN ('ops_action', '_prisma_migrations') ORDER BY tablename`;
  const state: Record<string, string> = {};
  for (const { name } of tables) {
    const rows = await stack.database.$queryRawUnsafe<Array<{ digest: string | null }>>(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM "${name}" t`,
    );
    state[name] = rows[0]?.digest ?? 'empty';
  }
  return state;
}

const auditRows = () => stack.database.opsAction.findMany({ orderBy: { id: 'asc' } });

describe('a route is reached only by its own spelling, and its scope is checked by the route that runs', () => {
  it('every ops route, by a key holding every other scope: 403 in its own spelling, 404 in any other; nothing stored; every write audited', async () => {
    const before = await storedState();
    const auditBefore = (await auditRows()).length;
    const writes: Array<{ method: string; target: string; keyName: string; status: number }> = [];
    const answers: string[] = [];
    for (const route of opsRoutes) {
      if (typeof route.access !== 'object' || !('opsScope' in route.access))
        throw new Error(`${route.operationId} declares no scope`);
      const scope = route.access.opsScope;
      const key = allBut.get(scope)!;
      const method = route.method.toUpperCase();
      const path = concrete(route.path);
      const send = async (target: string, how: string, extraHeaders: Array<[string, string]> = []) => {
        const headers: Array<[string, string]> = [
          ['Authorization', `Bearer ${key}`],
          ['Idempotency-Key', randomUUID()],
          ...extraHeaders,
        ];
        const body = writeMethods.has(method) ? '{}' : undefined;
        if (body !== undefined) headers.push(['Content-Type', 'application/json']);
        const answer = await rawHttp(stack.apiBase, {
          method,
          target,
          headers,
          ...(body !== undefined ? { body } : {}),
        });
        answers.push(`${method} ${target} (${how}) → ${answer.status}`);
        if (writeMethods.has(method)) writes.push({ method, target, keyName: keyName(scope), status: answer.status });
        return answer;
      };

      const own = await send(path, 'own spelling');
      expect(own.status, `${method} ${path} without ${scope}`).toBe(403);
      // A HEAD's answer has no body to name its code.
      const codeOf = (body: string) => (JSON.parse(body) as { code: string }).code;
      if (method !== 'HEAD') expect(codeOf(own.body)).toBe('SCOPE_REQUIRED');

      for (const [how, target] of otherSpellings(path)) {
        const answer = await send(target, how);
        expect(answer.status, `${method} ${target} (${how})`).toBe(404);
        if (method !== 'HEAD') expect(codeOf(answer.body), `${method} ${target} (${how})`).toBe('NOT_FOUND');
      }
      if (method === 'GET') {
        // HEAD is GET's: the same scope.
        const head = await rawHttp(stack.apiBase, {
          method: 'HEAD',
          target: path,
          headers: [['Authorization', `Bearer ${key}`]],
        });
        expect(head.status, `HEAD ${path} without ${scope}`).toBe(403);
      }
      // A method override is no way around a scope: the request stays what it is.
      for (const header of ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override']) {
        const other = method === 'GET' ? 'POST' : 'GET';
        const overridden = await send(`${path}?_method=${other}`, `${header}: ${other}`, [[header, other]]);
        expect(overridden.status, `${method} ${path} with ${header}: ${other}`).toBe(403);
      }
      // OPTIONS names nothing and does nothing.
      const options = await rawHttp(stack.apiBase, {
        method: 'OPTIONS',
        target: path,
        headers: [['Authorization', `Bearer ${key}`]],
      });
      expect(options.status, `OPTIONS ${path}`).toBe(404);
    }
    expect(answers.length).toBeGreaterThan(opsRoutes.length * 10);

    expect(await storedState()).toEqual(before);
    // One audit row per write, with the key's name and the refusal it got (written behind the answers: waited for).
    let pending = [...writes];
    await waitFor(
      'every write audited',
      async () => {
        pending = [...writes];
        for (const row of (await auditRows()).slice(auditBefore)) {
          const at = pending.findIndex(
            (write) =>
              write.method === row.method &&
              write.keyName === row.keyName &&
              write.status === row.status &&
              write.target.split('?')[0] === row.path,
          );
          if (at >= 0) pending.splice(at, 1);
        }
        return pending.length === 0 ? true : undefined;
      },
      15_000,
    ).catch(() => undefined);
    expect(pending, 'writes without their audit row').toEqual([]);
  });

  it('with the scope, the own spelling runs the route and every other spelling is still 404', async () => {
    // The approver is a key other than the batch's creator (the stack's own key).
    const approver = allBut.get('fund')!;
    const approvePath = `/ops/funding-batches/${ids.batchId}/approve`;
    for (const [how, target] of otherSpellings(approvePath)) {
      const answer = await rawHttp(stack.apiBase, {
        method: 'POST',
        target,
        headers: [['Authorization', `Bearer ${approver}`]],
      });
      expect(answer.status, `${target} (${how})`).toBe(404);
    }
    expect((await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: ids.batchId! } })).state).toBe(
      'AWAITING_APPROVAL',
    );
    const approved = await rawHttp(stack.apiBase, {
      method: 'POST',
      target: approvePath,
      headers: [['Authorization', `Bearer ${approver}`]],
    });
    expect(approved.status).toBe(200);
    expect(JSON.parse(approved.body)).toMatchObject({ state: 'RUNNING', approvedBy: keyName('fund') });
  });

  it('a write refused for its key is audited: 401 without a key name, 403 with it; an audit write that fails is tried again until it lands', async () => {
    const path = `/ops/fundings/${ids.fundingId}/cancel`;
    const wrong = await rawHttp(stack.apiBase, {
      method: 'POST',
      target: path,
      headers: [['Authorization', 'Bearer not-a-key-of-ours']],
    });
    expect(wrong.status).toBe(401);
    await waitFor(
      'the 401 audited',
      () =>
        stack.database.opsAction
          .findFirst({ where: { path, status: 401, keyName: null } })
          .then((row) => row ?? undefined),
      15_000,
    );

    // The audit table refuses every insert for a moment (a full disk, a failover): the row still lands.
    await stack.database.$executeRawUnsafe(
      `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit unavailable'; END $$`,
    );
    await stack.database.$executeRawUnsafe(
      `CREATE TRIGGER refuse_audit BEFORE INSERT ON ops_action FOR EACH STATEMENT EXECUTE FUNCTION refuse_audit()`,
    );
    const lastBefore = (await stack.database.opsAction.findFirst({ orderBy: { id: 'desc' } }))?.id ?? 0n;
    try {
      const refused = await rawHttp(stack.apiBase, {
        method: 'POST',
        target: path,
        headers: [['Authorization', `Bearer ${allBut.get('fund')!}`]],
      });
      expect(refused.status).toBe(403);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await stack.database.opsAction.count({ where: { id: { gt: lastBefore } } })).toBe(0);
    } finally {
      await stack.database.$executeRawUnsafe('DROP TRIGGER refuse_audit ON ops_action');
      await stack.database.$executeRawUnsafe('DROP FUNCTION refuse_audit()');
    }
    const row = await waitFor(
      'the 403 audited once the table takes rows again',
      () =>
        stack.database.opsAction
          .findFirst({ where: { id: { gt: lastBefore }, path, status: 403 } })
          .then((found) => found ?? undefined),
      20_000,
    );
    expect(row.keyName).toBe(keyName('fund'));
  });

  it('the console is as exact: Home is /console only (not /console/), and no other spelling of a page reaches it, signed in or not', async () => {
    // A session of the stack's own key (every scope), signed in as the sign-in page's form does.
    const form = await fetch(`${stack.apiBase}/console/sign-in`);
    await form.arrayBuffer();
    const pre = form.headers
      .getSetCookie()
      .find((cookie) => cookie.startsWith('walletflow_console_pre='))!
      .split(';')[0]!;
    const signedIn = await fetch(`${stack.apiBase}/console/sign-in`, {
      method: 'POST',
      headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
      body: `_csrf=${pre.split('=')[1]}&key=${encodeURIComponent(stack.opsKey)}`,
    });
    await signedIn.arrayBuffer();
    expect(signedIn.status).toBe(200);
    const session = signedIn.headers
      .getSetCookie()
      .find((cookie) => /^(__Host-)?walletflow_console=/.test(cookie))!
      .split(';')[0]!;
    const home = await rawHttp(stack.apiBase, { method: 'GET', target: '/console', headers: [['Cookie', session]] });
    expect(home.status).toBe(200);
    expect(home.body).toContain('Treasury');
    for (const cookie of [session, undefined]) {
      for (const target of [
        '/console/',
        '/console/?x=1',
        '/Console',
        '/CONSOLE/',
        '/console//',
        '/%63onsole',
        '/console/search/',
        '/console/Search',
        '/console/SEARCH',
      ]) {
        const answer = await rawHttp(stack.apiBase, {
          method: 'GET',
          target,
          headers: cookie ? [['Cookie', cookie]] : [],
        });
        if (cookie || !target.startsWith('/console/') || target.startsWith('/console/?') || target === '/console/') {
          expect(answer.status, `${target}${cookie ? ' signed in' : ''}`).toBe(404);
          expect(answer.body, target).not.toContain('Treasury');
        } else {
          // Without a session, a page under /console/ in another spelling goes to the sign-in page (which then finds no
          // page there).
          expect(answer.status, target).toBe(303);
        }
      }
    }
  });

  it('the rest of the API is as exact: health, docs, the session URL, the landing page, the connect routes', async () => {
    for (const target of [
      '/HEALTHZ',
      '/healthz/',
      '/Readyz',
      '/DOCS/openapi.json',
      '/docs/openapi.json/',
      '/docs/OpenAPI.json',
      '/EMBEDDED/session',
      '/APP',
      '/Connect/start',
    ]) {
      const answer = await rawHttp(stack.apiBase, { method: 'GET', target });
      expect(answer.status, target).toBe(404);
    }
    expect((await rawHttp(stack.apiBase, { method: 'GET', target: '/healthz' })).status).toBe(200);
  });
});
