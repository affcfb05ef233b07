// `walletflow webhooks listen --forward-to URL` end to end: the real CLI as a child process against
// the real stack (API, worker, the deliverWebhooks workflow, PostgreSQL, sandbox), forwarding to a
// local receiver. A funding that ends APPROVED is printed with its signature verified and forwarded
// with its Standard Webhooks headers (checked by the independent verifier under the endpoint's
// secret); a forged event is refused and not forwarded; SIGINT deletes the temporary endpoint.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { webhookEventBodySchema } from '../../domain/webhook.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { webhookSecretContext } from '../../webhooks/webhook-store.ts';
import { startDeliverWebhooks } from '../../workflows/deliver-webhooks.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { verifyStandardWebhook } from '../support/standard-webhooks-verifier.ts';
import { waitFor as waitForValue } from '../support/wait-for.ts';
import { nodeArgsFor } from '../support/node-entry.ts';
import { runCli } from '../support/cli-run.ts';

const root = path.resolve(import.meta.dirname, '../..');

interface Forwarded {
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined };
  body: string;
}

let stack: PartnerStack;
let target: Server;
let targetUrl: string;
const forwarded: Forwarded[] = [];
const delivererId = `webhooks-listen-test-${randomUUID()}`;
let cli: ChildProcess | undefined;
let output = '';

/** Waits for what the CLI shows, with its output in the error. */
const waitFor = <T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
): Promise<T> => waitForValue(what, probe, timeoutMs, () => `CLI output:\n${output}`);

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
  // This stack's own deliverer, polling often (the worker process would keep one running).
  await startDeliverWebhooks(stack.temporal, {
    taskQueue: stack.taskQueue,
    workflowId: delivererId,
    input: { pollIntervalMs: 100, roundMs: 2000 },
  });
  // The developer's own service, that `--forward-to` names.
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const header = (name: string) => req.headers[name] as string | undefined;
      forwarded.push({
        headers: {
          id: header('webhook-id'),
          timestamp: header('webhook-timestamp'),
          signature: header('webhook-signature'),
        },
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  if (cli && cli.exitCode === null) cli.kill('SIGKILL');
  await stack?.temporal.workflow
    .getHandle(delivererId)
    .terminate('test over')
    .catch(() => undefined);
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.close();
});

describe('walletflow webhooks listen --forward-to', () => {
  it('prints each event with its signature verified, forwards it signed, refuses a forgery and deletes its endpoint on SIGINT', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, WALLETFLOW_OPS_KEY: stack.opsKey };
    for (const name of ['WALLETFLOW_API_URL', 'WALLETFLOW_OPS_KEY_FILE', 'OPS_API_KEYS', 'OPS_API_KEYS_FILE'])
      delete env[name];
    cli = spawn(
      process.execPath,
      [...nodeArgsFor('cli/main.ts'), 'webhooks', 'listen', '--forward-to', targetUrl, '--api', stack.apiBase],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    cli.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    cli.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

    const ready = await waitFor(
      'the CLI is ready',
      () => /Ready: endpoint (\S+) receives every event at (\S+), forwarded to (\S+)\./.exec(output) ?? undefined,
    );
    const [, endpointId, localUrl, forwardTo] = ready;
    expect(forwardTo).toBe(targetUrl);
    const endpoint = await stack.database.webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId! } });
    expect(endpoint.url).toBe(localUrl);
    const secret = createTokenCipher(stack.encryptionKey).decrypt(
      endpoint.secretEncrypted,
      webhookSecretContext(endpointId!),
    );

    // An event: a CODE funding that ends APPROVED.
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '100.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const started = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '12.00' } }),
    });
    expect(started.status).toBe(202);
    const { fundingId } = (await started.json()) as FundingView;

    // Forwarded as received: the body and the webhook-* headers, which verify under the endpoint's secret.
    const ours = await waitFor('the event forwarded', () =>
      forwarded.find((each) => {
        const event = webhookEventBodySchema.safeParse(JSON.parse(each.body));
        return (
          event.success &&
          event.data.type === 'funding.approved' &&
          (event.data.data as { fundingId?: string }).fundingId === fundingId
        );
      }),
    );
    expect(verifyStandardWebhook(secret, ours.headers, ours.body)).toBe(true);
    expect(ours.body).not.toContain(code);
    // Printed: its type, its webhook-id, the signature verified and the forward's answer.
    const line = await waitFor('the event printed', () =>
      output.split('\n').find((each) => each.includes(ours.headers.id!)),
    );
    expect(line).toMatch(
      new RegExp(
        `\\bfunding\\.approved {2}${ours.headers.id!} {2}signature verified → ${targetUrl.replace(/[.]/g, '\\.')} \\[204\\]$`,
      ),
    );

    // A forgery at the CLI's endpoint: refused (400), printed INVALID, never forwarded.
    const forgedId = `msg_forged_${randomUUID()}`;
    const forged = await fetch(localUrl!, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': forgedId,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      },
      body: JSON.stringify({ type: 'funding.approved', data: { fundingId: randomUUID() } }),
    });
    expect(forged.status).toBe(400);
    expect(
      await waitFor('the forgery printed', () => output.split('\n').find((each) => each.includes(forgedId))),
    ).toContain('signature INVALID');
    expect(forwarded.some((each) => each.headers.id === forgedId)).toBe(false);

    // Ctrl-C: the endpoint is deleted, and the CLI says so and exits 0.
    cli.kill('SIGINT');
    const [exitCode] = await exited;
    expect(exitCode, output).toBe(0);
    expect(output).toContain(`Endpoint ${endpointId!} deleted.`);
    expect((await stack.opsFetch(`/ops/webhooks/endpoints/${endpointId!}`)).status).toBe(404);
  }, 120_000);
  it('refuses a plain http address of another machine as every ops command does: exit 64, nothing sent', async () => {
    const result = await runCli(['webhooks', 'listen', '--api', 'http://10.0.0.5:3000'], {
      env: { WALLETFLOW_OPS_KEY: 'not-sent' },
      timeoutMs: 30_000,
    });
    // Before: the refusal escaped the command and the CLI exited 1.
    expect(result.code).toBe(64);
    expect(result.stderr).toContain('plain http sends the ops key in clear text');
    expect(result.stderr).not.toContain('not-sent');
  });

  it('deletes the endpoint when Ctrl-C comes while it is being registered', async () => {
    // The API behind a relay that holds the registration until the CLI has been sent SIGINT.
    let releaseRegistration: () => void = () => {};
    const held = new Promise<void>((resolve) => (releaseRegistration = resolve));
    let registering: () => void = () => {};
    const registrationArrived = new Promise<void>((resolve) => (registering = resolve));
    const relay = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void (async () => {
          if (req.method === 'POST') {
            registering();
            await held;
          }
          const answer = await fetch(`${stack.apiBase}${req.url ?? '/'}`, {
            method: req.method ?? 'GET',
            headers: {
              authorization: String(req.headers.authorization),
              ...(req.headers['content-type'] ? { 'content-type': String(req.headers['content-type']) } : {}),
            },
            ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
          });
          res
            .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' })
            .end(Buffer.from(await answer.arrayBuffer()));
        })();
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayBase = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, WALLETFLOW_OPS_KEY: stack.opsKey };
      for (const name of ['WALLETFLOW_API_URL', 'WALLETFLOW_OPS_KEY_FILE', 'OPS_API_KEYS', 'OPS_API_KEYS_FILE'])
        delete env[name];
      let early = '';
      const child = spawn(process.execPath, [...nodeArgsFor('cli/main.ts'), 'webhooks', 'listen', '--api', relayBase], {
        cwd: root,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (early += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (early += chunk));
      const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      const before = new Date();
      await registrationArrived;
      child.kill('SIGINT');
      // Give the signal time to land before the API answers.
      await new Promise((resolve) => setTimeout(resolve, 500));
      releaseRegistration();
      const [exitCode, signal] = await exited;
      expect({ exitCode, signal }, early).toEqual({ exitCode: 0, signal: null });
      const created = await stack.database.webhookEndpoint.findMany({
        where: { createdAt: { gte: before }, url: { startsWith: 'http://127.0.0.1:' } },
      });
      const ours = created.filter((endpoint) => early.includes(endpoint.id));
      expect(ours, early).toHaveLength(1);
      expect(ours[0]!.deletedAt, early).not.toBeNull();
    } finally {
      relay.closeAllConnections();
      await new Promise((resolve) => relay.close(resolve));
    }
  }, 60_000);
});
