// `walletflow webhooks listen --forward-to URL` (like `stripe listen`): registers a temporary
// endpoint on the running API for every event, serves it on 127.0.0.1, prints each event with
// whether its Standard Webhooks signature verifies, forwards it (body and webhook-* headers as
// received) to URL, answers with the forward's status (so a failing forward is retried by the
// deliverer), and deletes the endpoint on Ctrl-C. The secret is kept in memory only.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { webhookEndpointCreatedSchema, webhookEventTypes } from '../domain/webhook.ts';
import { verifyWebhook } from '../webhooks/signature.ts';
import { reportError } from './cli-errors.ts';
import { resolveOpsTarget } from './ops-target.ts';

export interface ListenOptions {
  forwardTo?: string;
  api?: string;
  key?: string;
  /** The local receiver's port; absent: any free one. */
  port?: string;
}

const forwardSchema = z.url({ protocol: /^https?$/, error: '--forward-to must be an http(s) URL' });

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function runWebhooksListen(options: ListenOptions): Promise<number> {
  const forward = options.forwardTo === undefined ? undefined : forwardSchema.safeParse(options.forwardTo);
  if (forward && !forward.success) {
    console.error(`walletflow webhooks listen: ${forward.error.issues[0]?.message ?? 'bad --forward-to'}`);
    return 64;
  }
  let target: ReturnType<typeof resolveOpsTarget>;
  try {
    target = resolveOpsTarget(options);
  } catch (error) {
    // A refused address (usage, 64) or no key found (configuration, 78), told as every ops command tells it.
    return reportError('webhooks listen', error);
  }
  const authorization = { authorization: `Bearer ${target.key}` };
  let secret = '';
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const headers = {
        id: req.headers['webhook-id'] as string | undefined,
        timestamp: req.headers['webhook-timestamp'] as string | undefined,
        signature: req.headers['webhook-signature'] as string | undefined,
      };
      const verification = verifyWebhook(secret, headers, body);
      const verified = verification.verified;
      let type = '?';
      try {
        type = String((JSON.parse(body) as { type?: unknown }).type);
      } catch {
        // printed as '?'
      }
      let status = verified ? 200 : 400;
      let forwarded = '';
      if (verified && forward?.success) {
        try {
          const answer = await fetch(forward.data, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': headers.id!,
              'webhook-timestamp': headers.timestamp!,
              'webhook-signature': headers.signature!,
            },
            body,
            signal: AbortSignal.timeout(10_000),
          });
          await answer.body?.cancel().catch(() => undefined);
          status = answer.status >= 200 && answer.status < 300 ? 200 : 502;
          forwarded = ` → ${forward.data} [${answer.status}]`;
        } catch (error) {
          status = 502;
          forwarded = ` → ${forward.data} [${(error as { cause?: { code?: string } }).cause?.code ?? 'failed'}]`;
        }
      }
      console.log(
        `${new Date().toISOString()}  ${type}  ${headers.id ?? '(no webhook-id)'}  signature ${verification.verified ? 'verified' : `INVALID (${verification.reason}: ${verification.message})`}${forwarded}`,
      );
      res.statusCode = status;
      res.end();
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(Number(options.port ?? 0), '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  // Listened for before the endpoint is registered: a Ctrl-C during the registration must not end
  // the process with the endpoint made (it is deleted as soon as the API answers).
  let stopRequested = false;
  const stopped = new Promise<void>((resolve) => {
    const stop = () => {
      stopRequested = true;
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  let created: z.infer<typeof webhookEndpointCreatedSchema>;
  try {
    const response = await fetch(`${target.apiBase}/ops/webhooks/endpoints`, {
      method: 'POST',
      headers: { ...authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: webhookEventTypes }),
      signal: AbortSignal.timeout(15_000),
    });
    if (response.status !== 201) {
      console.error(
        `walletflow webhooks listen: the API refused the endpoint (HTTP ${response.status}): ${await response.text()}`,
      );
      server.close();
      return stopRequested ? 130 : 3;
    }
    created = webhookEndpointCreatedSchema.parse(await response.json());
  } catch (error) {
    console.error(
      `walletflow webhooks listen: the ops API is not reachable at ${target.apiBase} (${(error as Error).message})`,
    );
    server.close();
    return 3;
  }
  secret = created.secret;
  if (!stopRequested) {
    console.log(
      `Ready: endpoint ${created.id} receives every event at ${url}${forward?.success ? `, forwarded to ${forward.data}` : ''}. Ctrl-C to stop (the endpoint is deleted).`,
    );
  }
  await stopped;
  const deleted = await fetch(`${target.apiBase}/ops/webhooks/endpoints/${created.id}`, {
    method: 'DELETE',
    headers: authorization,
    signal: AbortSignal.timeout(15_000),
  }).catch(() => null);
  server.closeAllConnections();
  server.close();
  if (deleted?.status !== 204) {
    console.error(
      `walletflow webhooks listen: could not delete endpoint ${created.id}; delete it with DELETE /ops/webhooks/endpoints/${created.id}`,
    );
    return 3;
  }
  console.log(`Endpoint ${created.id} deleted.`);
  return 0;
}
