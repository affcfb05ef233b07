// The codec endpoint for the Temporal UI and CLI (Temporal's codec server protocol): `POST
// /decode` and `POST /encode` (also under `/{namespace}/…`) take `{"payloads": [...]}` in
// proto3 JSON (metadata values and data in base64) and answer the same shape, run through the
// payload codec. It holds the payload keys, so it runs where the operators who hold them are
// (loopback by default), and answers cross-origin only to the Temporal UI origins it is given.
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { z } from 'zod';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { PayloadCodecError } from '../lib/payload-codec.ts';

const base64 = z
  .string()
  .max(8_000_000)
  .regex(/^[A-Za-z0-9+/=_-]*$/, 'must be base64');

const jsonPayload = z.object({
  metadata: z.record(z.string().max(256), base64).optional(),
  data: base64.optional(),
});

export const codecRequestSchema = z.object({ payloads: z.array(jsonPayload).max(10_000) });
export type JsonPayload = z.infer<typeof jsonPayload>;

const fromJson = (payload: JsonPayload): Payload => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
  ),
  data: Buffer.from(payload.data ?? '', 'base64'),
});

const toJson = (payload: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([key, value]) => [
      key,
      Buffer.from(value ?? new Uint8Array()).toString('base64'),
    ]),
  ),
  data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
});

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Every encode and decode must carry `Authorization: Bearer <bearerToken>` (it decrypts workflow data). */
  bearerToken: string;
  /** Origins allowed to call from a browser (the Temporal UI's), e.g. `http://localhost:8233`. */
  allowedOrigins: string[];
}

const problem = (res: express.Response, status: number, code: string, message: string) =>
  res.status(status).type('application/problem+json').json({ title: message, status, code, detail: message });

function cors(allowedOrigins: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    const origin = req.get('origin');
    if (origin && allowedOrigins.has(origin)) {
      res.set('Access-Control-Allow-Origin', origin);
      res.set('Access-Control-Allow-Credentials', 'true');
      res.set('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      res.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.set('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS') {
      res.status(origin && allowedOrigins.has(origin) ? 204 : 403).end();
      return;
    }
    // A browser page from another origin gets no answer at all, not just an unreadable one.
    if (origin && !allowedOrigins.has(origin)) {
      problem(res, 403, 'ORIGIN_NOT_ALLOWED', 'this origin may not use the codec endpoint');
      return;
    }
    next();
  };
}

export function createCodecApp(options: CodecServerOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(cors(new Set(options.allowedOrigins)));
  const expected = createHash('sha256').update(options.bearerToken).digest();
  app.use((req, res, next) => {
    const presented = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(req.get('authorization') ?? '')?.[1];
    if (!presented || !timingSafeEqual(createHash('sha256').update(presented).digest(), expected)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="walletflow-codec"');
      problem(res, 401, 'UNAUTHORIZED', 'send Authorization: Bearer <codec token>');
      return;
    }
    next();
  });
  app.use(express.json({ limit: '10mb' }));

  const handle =
    (direction: 'encode' | 'decode'): RequestHandler =>
    async (req, res, next) => {
      const parsed = codecRequestSchema.safeParse(req.body);
      if (!parsed.success) {
        problem(
          res,
          400,
          'INVALID_PAYLOADS',
          'the body must be {"payloads": [{"metadata": {…base64}, "data": base64}]}',
        );
        return;
      }
      try {
        const payloads = parsed.data.payloads.map(fromJson);
        const result =
          direction === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
        res.json({ payloads: result.map(toJson) });
      } catch (error) {
        next(error);
      }
    };

  for (const prefix of ['', '/:namespace']) {
    app.post(`${prefix}/encode`, handle('encode'));
    app.post(`${prefix}/decode`, handle('decode'));
  }
  app.use((_req, res) => problem(res, 404, 'NOT_FOUND', 'the codec endpoint serves POST /encode and POST /decode'));
  const onError: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    if (error instanceof PayloadCodecError) {
      problem(res, 422, error.code, error.message);
      return;
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      problem(res, status, 'INVALID_REQUEST', status === 413 ? 'the body is too large' : 'the body must be JSON');
      return;
    }
    problem(res, 500, 'CODEC_FAILED', 'the payloads could not be processed');
  };
  app.use(onError);
  return app;
}
