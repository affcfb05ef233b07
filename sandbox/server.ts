// The sandbox wallet service's public entry: builds the Express app (connect under /connect, op
// under /op, transfers under /v1, pages and admin under /_sandbox) and runs it on one port.
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type Express } from 'express';
import type { Agent } from 'undici';
import { adminRouter } from './admin-routes.ts';
import { connectRouter } from './connect-routes.ts';
import { createSandboxContext, type SandboxContext } from './context.ts';
import { documentsRouter } from './documents.ts';
import { createSenderAgent } from './launch.ts';
import { opRouter } from './op-routes.ts';
import { pagesRouter } from './pages.ts';
import { completeRegistration, type PartnerRegistration } from './registration.ts';
import type { SandboxSettings } from './state.ts';
import { transferRouter } from './transfer-routes.ts';
import { settleDueTransfers } from './transfers.ts';

export type { PartnerRegistration } from './registration.ts';
export type { SandboxSettings } from './state.ts';

export interface SandboxOptions {
  /** 0 picks a free port; default SANDBOX_PORT or 4010. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Fixed parts of the partner registration; the rest is generated. */
  registration?: Partial<PartnerRegistration>;
  /** Seed of the fault generator when PUT /_sandbox/faults gives none. */
  seed?: number;
  /** Initial settings (processing delay, transfer expiry, merchant fee, funding balance). */
  settings?: Partial<SandboxSettings>;
  /** Receives one line per request (method, path without query, status); never tokens. */
  logRequest?: (line: string) => void;
}

export interface RunningSandbox {
  /** http://HOST:PORT */
  url: string;
  connectUrl: string;
  opUrl: string;
  transferUrl: string;
  partner: PartnerRegistration;
  close(): Promise<void>;
}

/**
 * The 4xx of a request the framework could not read: a body the parser could not read or does not take (its charset,
 * its encoding, its size), a path the router could not decode. Else null.
 */
function unreadableRequestStatus(error: unknown): number | null {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : null;
}

/** Requests it cannot read answer 400 in each service's own error style; anything else is a 500. */
const errorHandler: ErrorRequestHandler = (error, req, res, next) => {
  if (res.headersSent) return next(error);
  const status = unreadableRequestStatus(error);
  if (status !== null) {
    if (req.path === '/connect/token') {
      res.status(400).json({ error: 'invalid_request', error_description: 'the body could not be parsed' });
    } else {
      res.status(400).json({ code: 'VALIDATION_ERROR', message: 'the request could not be read' });
    }
    return;
  }
  console.error('sandbox: unexpected error', req.method, req.path, error instanceof Error ? error.message : error);
  res.status(500).json({ code: 'INTERNAL_ERROR', message: 'unexpected sandbox error' });
};

export function createSandboxApp(
  context: SandboxContext,
  senderAgent: Agent,
  options: { logRequest?: (line: string) => void } = {},
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const { logRequest } = options;
  if (logRequest) {
    app.use((req, res, next) => {
      const started = Date.now();
      res.on('finish', () =>
        logRequest(`${req.method} ${req.originalUrl.split('?')[0] ?? ''} ${res.statusCode} ${Date.now() - started}ms`),
      );
      next();
    });
  }
  app.use((_req, _res, next) => {
    settleDueTransfers(context);
    next();
  });
  app.use('/connect', connectRouter(context));
  app.use('/op', opRouter(context));
  app.use('/v1', transferRouter(context));
  app.use('/_sandbox', pagesRouter(context, senderAgent), documentsRouter(context), adminRouter(context, senderAgent));
  app.get('/', (_req, res) => res.redirect(302, '/_sandbox/'));
  app.use((_req, res) => {
    res.status(404).json({ code: 'NOT_FOUND', message: 'no such endpoint' });
  });
  app.use(errorHandler);
  return app;
}

function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** SANDBOX_PORT (contract-decisions section 9): absent or empty, 4010; anything but a port number stops start-up. */
export function sandboxPortFrom(env: NodeJS.ProcessEnv): number {
  const raw = env.SANDBOX_PORT?.trim();
  if (raw === undefined || raw === '') return 4010;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535)
    throw new Error(`SANDBOX_PORT must be a port number (0 to 65535), not "${raw}"`);
  return port;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const { registration, profileEncryptionKey } = completeRegistration(options.registration);
  const shutdown = new AbortController();
  const context = createSandboxContext({
    registration,
    profileEncryptionKey,
    shutdown: shutdown.signal,
    ...(options.settings ? { settings: options.settings } : {}),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  });
  const senderAgent = createSenderAgent(registration.senderIp);
  const app = createSandboxApp(context, senderAgent, options.logRequest ? { logRequest: options.logRequest } : {});
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? sandboxPortFrom(process.env);
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${displayHost(host)}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    connectUrl: `${url}/connect`,
    opUrl: `${url}/op`,
    transferUrl: `${url}/v1`,
    partner: registration,
    close() {
      closing ??= (async () => {
        // Ends delays and hung answers first, then drops keep-alive sockets so close() is prompt.
        shutdown.abort();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
        await senderAgent.close().catch(() => undefined);
      })();
      return closing;
    },
  };
}
