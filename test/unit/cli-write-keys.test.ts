// A CLI write whose answer does not come (an error status, no answer in time) may have been applied: a batch stored
// and paying, an adjustment posted. The command says its Idempotency-Key before the request goes out, and a write's
// failure names it again, so that the operator's retry is the same request, applied once: never a second batch or a
// second adjustment. Real HTTP on loopback.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runBatchesCreate } from '../../cli/batches.ts';
import { reportError } from '../../cli/cli-errors.ts';
import { exitCodes } from '../../cli/exit-codes.ts';
import { runAccountsAdjust } from '../../cli/ledger.ts';
import { createOpsClient } from '../../client/ops-client.generated.ts';

/** What happened, in order: the CLI's stderr lines and the requests the API took (with their key). */
const happened: string[] = [];
let server: Server;
let api = '';
/**
 * How the API answers a write: a 503 as when Temporal is away (the batch stored), nothing at all, or a load balancer's
 * 504 page while the API goes on.
 */
let answer: 'unavailable' | 'silence' | 'gateway' = 'unavailable';

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      happened.push(`request ${req.method} ${req.url} key=${String(req.headers['idempotency-key'])}`);
      if (answer === 'silence') return;
      if (answer === 'gateway') {
        res.writeHead(504, { 'content-type': 'text/html' });
        return res.end('<html><body>504 Gateway Time-out</body></html>');
      }
      res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '5' });
      res.end(
        JSON.stringify({
          type: 'about:blank',
          title: 'Service Unavailable',
          status: 503,
          code: 'WORKFLOW_UNAVAILABLE',
          detail: 'stored; send the same request with the same Idempotency-Key',
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  happened.length = 0;
  answer = 'unavailable';
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** Runs a command with stderr recorded into `happened`, line by line. */
async function withStderr(command: () => Promise<number>): Promise<number> {
  vi.stubEnv('WALLETFLOW_OPS_KEY', 'k'.repeat(40));
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  vi.spyOn(process.stderr, 'write').mockImplementation((text) => {
    for (const line of String(text).split('\n')) if (line !== '') happened.push(line);
    return true;
  });
  return command();
}

const keyOf = (line: string | undefined) => /key=(\S+)/.exec(line ?? '')?.[1];

describe('a CLI write the API did not answer with success', () => {
  it('batches create says its key before the request, the key the request carried: the retry is the same batch', async () => {
    // Found by a read: the key was printed only after a 2xx. A 503 (the batch stored, its runner started by the sweep)
    // or an answer that never came left the operator no key, and running the command again stored a second batch.
    const file = join(mkdtempSync(join(tmpdir(), 'wf-cli-keys-')), 'payroll.csv');
    writeFileSync(file, 'reference,recipient_type,recipient,amount\nrow-1,CODE,1234567,1.00\n');
    const code = await withStderr(() => runBatchesCreate({ api, file, output: 'text' }));
    expect(code).toBe(exitCodes.api);
    const request = happened.findIndex((line) => line.startsWith('request POST /ops/funding-batches'));
    const key = keyOf(happened[request]);
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    const said = happened.findIndex((line) => line.includes(`idempotency key ${key}`));
    expect({ said: said >= 0 && said < request, retry: happened[said] }).toEqual({
      said: true,
      retry: `walletflow batches create: idempotency key ${key} (to retry without applying it twice: --idempotency-key ${key})`,
    });
  });

  it('accounts adjust says its key before the request, and a retry with it sends the same key', async () => {
    const adjust = (idempotencyKey?: string) =>
      withStderr(() =>
        runAccountsAdjust('TREASURY', {
          api,
          amount: '-25.00',
          reason: 'correction',
          currency: 'PHP',
          ...(idempotencyKey ? { idempotencyKey } : {}),
        }),
      );
    expect(await adjust()).toBe(exitCodes.api);
    const first = keyOf(happened.find((line) => line.startsWith('request POST /ops/accounts/TREASURY/adjustments')));
    expect(happened[0]).toContain(`--idempotency-key ${first}`);
    happened.length = 0;
    expect(await adjust(first)).toBe(exitCodes.api);
    expect(keyOf(happened.find((line) => line.startsWith('request POST')))).toBe(first);
  });

  it('a write given no answer in time is said to be possibly applied, with its key; a read is not reachable', async () => {
    answer = 'silence';
    const client = createOpsClient({ baseUrl: api, key: 'k'.repeat(40), timeoutMs: 300 });
    const write = await client
      .adjustAccount({
        account: 'TREASURY',
        idempotencyKey: 'adjust-key-2',
        body: { amount: { currency: 'PHP', value: '-25.00' }, reason: 'r' },
      })
      .catch((caught: unknown) => caught);
    expect(write).toMatchObject({ brokenOff: false, method: 'POST', idempotencyKey: 'adjust-key-2' });
    const read = await client.listFundings().catch((caught: unknown) => caught);
    happened.length = 0;
    await withStderr(async () => {
      expect(reportError('accounts adjust', write)).toBe(exitCodes.api);
      expect(reportError('fundings list', read)).toBe(exitCodes.api);
      return 0;
    });
    expect(happened).toEqual([
      `walletflow accounts adjust: the ops API at ${api} gave no answer (no answer in time): the request may have been applied.`,
      'walletflow accounts adjust: send the same command again with --idempotency-key adjust-key-2: applied once, never twice.',
      `walletflow fundings list: the ops API is not reachable at ${api} (no answer in time).`,
      'walletflow fundings list: is walletflow running? start it with `npm run dev`, or point the CLI at it with --api <url> or WALLETFLOW_API_URL.',
    ]);
  });

  it('a write answered 5xx by something that is not the API is said to be possibly applied, with its key', async () => {
    // Found by the second read: a load balancer's 504 for a batch the API went on storing was told as the API's answer.
    answer = 'gateway';
    const file = join(mkdtempSync(join(tmpdir(), 'wf-cli-keys-')), 'payroll.csv');
    writeFileSync(file, 'reference,recipient_type,recipient,amount\nrow-1,CODE,1234567,1.00\n');
    expect(await withStderr(() => runBatchesCreate({ api, file, output: 'text' }))).toBe(exitCodes.api);
    const key = keyOf(happened.find((line) => line.startsWith('request POST')));
    expect(happened.slice(-2)).toEqual([
      "walletflow batches create: a 504 that is not the ops API's answer: the request may have been applied.",
      `walletflow batches create: send the same command again with --idempotency-key ${key}: applied once, never twice.`,
    ]);
  });

  it('a write without a key that got no answer is said to be possibly applied, never to be retried with a key it has not', async () => {
    // Found by the second read: `webhooks endpoints create` given no answer was told to send the same
    // --idempotency-key, which it does not take: run again, it made a second endpoint.
    answer = 'silence';
    const client = createOpsClient({ baseUrl: api, key: 'k'.repeat(40), timeoutMs: 300 });
    const write = await client
      .createWebhookEndpoint({ body: { url: 'https://partner.example/hooks', events: ['funding.approved'] } })
      .catch((caught: unknown) => caught);
    // A port no one listens on (a server's, closed): nothing reaches the API.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const nobody = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await createOpsClient({ baseUrl: nobody, key: 'k'.repeat(40) })
      .createWebhookEndpoint({ body: { url: 'https://partner.example/hooks', events: ['funding.approved'] } })
      .catch((caught: unknown) => caught);
    happened.length = 0;
    await withStderr(async () => {
      expect(reportError('webhooks endpoints create', write)).toBe(exitCodes.api);
      expect(reportError('webhooks endpoints create', refused)).toBe(exitCodes.api);
      return 0;
    });
    expect(happened.slice(0, 3)).toEqual([
      `walletflow webhooks endpoints create: the ops API at ${api} gave no answer (no answer in time): the request may have been applied.`,
      'walletflow webhooks endpoints create: look before running it again (a list or get command): it has no key to apply it only once.',
      `walletflow webhooks endpoints create: the ops API is not reachable at ${nobody} (ECONNREFUSED).`,
    ]);
  });
});
