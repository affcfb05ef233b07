// The typed ops client (client/ops-client.generated.ts) is what the OpenAPI document says today:
// regenerated in memory it equals the checked-in file, so CI fails when the API changes and nobody
// ran `npm run client:generate`. Plus its runtime against a recording fetch: URLs, headers, bodies,
// problems and unreachable APIs, and never the key in an error.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { createOpsClient, OpsNetworkError, OpsProblemError } from '../../client/ops-client.generated.ts';
import { reportError } from '../../cli/cli-errors.ts';
import { exitCodes } from '../../cli/exit-codes.ts';
import { generateOpsClient, headerParameterName, typeOf } from '../../scripts/ops-client-codegen.ts';

const root = path.resolve(import.meta.dirname, '../..');

describe('the generated ops client', () => {
  it('equals what the OpenAPI document generates (run `npm run client:generate` when this fails)', () => {
    const checkedIn = readFileSync(path.join(root, 'client/ops-client.generated.ts'), 'utf8');
    expect(
      generateOpsClient(buildOpenApiDocument()) === checkedIn,
      'client/ops-client.generated.ts is stale: run npm run client:generate',
    ).toBe(true);
  });

  it('has one method per /ops operation of the document', () => {
    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { operationId: string }>> };
    const ids = Object.entries(document.paths)
      .filter(([route]) => route.startsWith('/ops/'))
      // A HEAD is a monitor's, answered without the client (a refused one: 405): no method of its own.
      .flatMap(([, item]) =>
        Object.entries(item)
          .filter(([method]) => method !== 'head')
          .map(([, operation]) => operation.operationId),
      )
      .sort();
    const client = createOpsClient({ baseUrl: 'http://127.0.0.1:1', key: 'k' });
    expect(Object.keys(client).sort()).toEqual(ids);
  });

  it('maps JSON Schema to TypeScript types', () => {
    expect(typeOf({ type: ['string', 'null'] })).toBe('string | null');
    expect(typeOf({ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } })).toBe(
      '(string | number)[]',
    );
    expect(typeOf({ enum: ['A', 'B'] })).toBe('"A" | "B"');
    expect(typeOf({ type: 'object', properties: { 'a-b': { type: 'boolean' } }, required: [] })).toBe(
      '{\n  "a-b"?: boolean;\n}',
    );
    expect(typeOf({ type: 'object', additionalProperties: { type: 'string' } })).toBe('{\n  [key: string]: string;\n}');
    expect(() => typeOf({ $ref: 'https://elsewhere/x' })).toThrow(/unsupported \$ref/);
    expect(headerParameterName('Idempotency-Key')).toBe('idempotencyKey');
    expect(headerParameterName('X-Ops-Actor')).toBe('opsActor');
  });
});

describe('the generated client at run time', () => {
  const secret = 'wf_secret_key_never_printed';
  function recording(answer: { status: number; body?: string; type?: string } | Error) {
    const calls: { url: string; init: RequestInit }[] = [];
    const fetchStub = (async (url: string | URL | Request, init: RequestInit = {}) => {
      calls.push({ url: String(url), init });
      if (answer instanceof Error) throw answer;
      return new Response(answer.body ?? null, {
        status: answer.status,
        headers: { 'content-type': answer.type ?? 'application/json' },
      });
    }) as typeof fetch;
    return { calls, client: createOpsClient({ baseUrl: 'http://api.test/', key: secret, fetch: fetchStub }) };
  }

  it('fills path, query and header parameters and sends the body as JSON', async () => {
    const { calls, client } = recording({ status: 202, body: '{"fundingId":"f1"}' });
    const answer = await client.createFunding({
      idempotencyKey: 'key-1',
      body: { recipient: { type: 'CODE', code: '1234567' }, amount: { currency: 'PHP', value: '1.00' } },
    });
    expect(answer.status).toBe(202);
    expect(answer.body.fundingId).toBe('f1');
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(calls[0]!.url).toBe('http://api.test/ops/fundings');
    expect(calls[0]!.init.method).toBe('POST');
    expect(headers['Idempotency-Key']).toBe('key-1');
    expect(headers.authorization).toBe(`Bearer ${secret}`);
    expect(JSON.parse(String(calls[0]!.init.body))).toMatchObject({ amount: { value: '1.00' } });

    const listed = recording({ status: 200, body: '{"items":[],"nextCursor":null}' });
    await listed.client.listFundings({ status: 'NEEDS_REVIEW', limit: 5 });
    expect(listed.calls[0]!.url).toBe('http://api.test/ops/fundings?status=NEEDS_REVIEW&limit=5');
    const account = recording({ status: 200, body: '{}' });
    await account.client.getAccount({ account: 'user/1 x' });
    expect(account.calls[0]!.url).toBe('http://api.test/ops/accounts/user%2F1%20x');
  });

  it('answers text for a non-JSON answer (settlement CSV)', async () => {
    const { client } = recording({ status: 200, body: 'kind,id\n', type: 'text/csv' });
    expect((await client.getSettlement({ date: '2026-01-01', format: 'csv' })).body).toBe('kind,id\n');
  });

  it('throws the problem with its code; the key is in no message', async () => {
    const { client } = recording({
      status: 409,
      type: 'application/problem+json',
      body: JSON.stringify({
        type: 'about:blank',
        status: 409,
        code: 'FUNDING_NOT_IN_REVIEW',
        title: 'Conflict',
        detail: 'not in review',
      }),
    });
    const error = await client
      .resolveFunding({ fundingId: 'f', body: { outcome: 'FAILED', note: 'n' } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpsProblemError);
    expect(error).toMatchObject({
      status: 409,
      code: 'FUNDING_NOT_IN_REVIEW',
      detail: 'not in review',
      transient: false,
    });
    expect(String((error as Error).message)).not.toContain(secret);

    const html = recording({ status: 404, type: 'text/html', body: '<h1>no</h1>' });
    await expect(html.client.getLink({ linkId: 'x' })).rejects.toMatchObject({ code: 'HTTP_404', problem: undefined });
    const busy = recording({
      status: 429,
      type: 'application/problem+json',
      body: JSON.stringify({ type: 'about:blank', status: 429, code: 'TOO_MANY', title: 'Too Many Requests' }),
    });
    await expect(busy.client.listPayments()).rejects.toMatchObject({ transient: true, detail: 'Too Many Requests' });
  });

  it('an answer that breaks off while its body is read: OpsNetworkError, never half a report as the answer', async () => {
    const brokenBody = (first: string) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(first));
          controller.error(Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }));
        },
      });
    const answering = (status: number, type: string, body: () => BodyInit) =>
      createOpsClient({
        baseUrl: 'http://api.test',
        key: secret,
        fetch: (async () => new Response(body(), { status, headers: { 'content-type': type } })) as typeof fetch,
      });
    const csv = answering(200, 'text/csv', () => brokenBody('kind,id,result\nfunding,f1,matched\n'));
    const error = await csv.getSettlement({ date: '2026-01-01', format: 'csv' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpsNetworkError);
    expect(error).toMatchObject({ brokenOff: true, reason: 'UND_ERR_SOCKET' });
    expect((error as Error).message).toBe("the ops API's answer from http://api.test broke off (UND_ERR_SOCKET)");
    // JSON cut short (a proxy that closed early): not an answer either.
    const cut = answering(200, 'application/json', () => '{"items":[{"kind":"funding"');
    await expect(cut.listFundings()).rejects.toMatchObject({ brokenOff: true, reason: 'its JSON is not whole' });
    // An error status stands without its body.
    const failed = answering(503, 'application/problem+json', () => brokenBody('{"type"'));
    await expect(failed.listFundings()).rejects.toMatchObject({ status: 503, code: 'HTTP_503' });
    // A write answered 2xx was applied, its answer lost: the CLI says so, with the key that answers it again once.
    const applied = answering(201, 'application/json', () => brokenBody('{"adjustmentId":"a'));
    const lost = await applied
      .adjustAccount({
        account: 'TREASURY',
        idempotencyKey: 'adjust-key-1',
        body: { amount: { currency: 'PHP', value: '-25.00' }, reason: 'r' },
      })
      .catch((caught: unknown) => caught);
    expect(lost).toMatchObject({ brokenOff: true, method: 'POST', idempotencyKey: 'adjust-key-1' });
    const said: string[] = [];
    const write = vi.spyOn(process.stderr, 'write').mockImplementation((text) => said.push(String(text)) > 0);
    try {
      expect(reportError('accounts adjust', lost)).toBe(exitCodes.api);
      expect(reportError('fundings list', error)).toBe(exitCodes.api);
    } finally {
      write.mockRestore();
    }
    expect(said.join('')).toBe(
      'walletflow accounts adjust: the ops API applied the request, but its answer broke off (UND_ERR_SOCKET).\n' +
        'walletflow accounts adjust: to see its answer, send the same command again with --idempotency-key adjust-key-1: applied once.\n' +
        "walletflow fundings list: the ops API's answer broke off (UND_ERR_SOCKET); nothing of it was used. Run the command again.\n",
    );
  });

  it('reads a report that keeps coming for longer than its time-out whole; one that stalls, or no headers in time, is no answer', async () => {
    // A real server over HTTP: the CSV comes in 15 parts, one every 100 ms (1.5 s in all, the time-out 0.6 s), or its
    // headers and one part, then silence.
    const server = createServer((req, res) => {
      const hang = () => req.socket.once('close', () => res.destroy());
      if (req.url?.includes('2026-01-03')) return hang();
      res.writeHead(200, { 'content-type': 'text/csv' });
      res.write('kind,id,result\r\n');
      if (req.url?.includes('2026-01-02')) return hang();
      let sent = 0;
      const timer = setInterval(() => {
        sent += 1;
        res.write(`funding,f${sent},matched\r\n`);
        if (sent === 15) {
          clearInterval(timer);
          res.end();
        }
      }, 100);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = createOpsClient({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        key: secret,
        timeoutMs: 600,
      });
      const whole = await client.getSettlement({ date: '2026-01-01', format: 'csv' });
      expect((whole.body as string).split('\r\n')).toHaveLength(17);
      await expect(client.getSettlement({ date: '2026-01-02', format: 'csv' })).rejects.toMatchObject({
        name: 'OpsNetworkError',
        brokenOff: true,
        reason: 'no answer in time',
      });
      await expect(client.getSettlement({ date: '2026-01-03', format: 'csv' })).rejects.toMatchObject({
        name: 'OpsNetworkError',
        brokenOff: false,
        reason: 'no answer in time',
      });
      // The caller's own abort is never "no answer in time" from a server that was answering: before the headers, the
      // caller's reason; while a 2xx body comes, an answer broken off "stopped by the caller" (a write's key kept).
      const caller = new AbortController();
      setTimeout(() => caller.abort(new Error('the operator pressed Ctrl-C')), 250);
      const beforeHeaders = await client
        .getSettlement({ date: '2026-01-03', format: 'csv' }, { signal: caller.signal })
        .catch((caught: unknown) => caught);
      expect(beforeHeaders).toEqual(new Error('the operator pressed Ctrl-C'));
      const plain = new AbortController();
      setTimeout(() => plain.abort(), 250);
      await expect(
        client.getSettlement({ date: '2026-01-01', format: 'csv' }, { signal: plain.signal }),
      ).rejects.toMatchObject({ name: 'OpsNetworkError', brokenOff: true, reason: 'stopped by the caller' });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('no answer: OpsNetworkError naming the base URL and the reason', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    const { client } = recording(refused);
    const error = await client.getFunding({ fundingId: 'f' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpsNetworkError);
    expect((error as Error).message).toBe('the ops API is not reachable at http://api.test (ECONNREFUSED)');
  });
});
