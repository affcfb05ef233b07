// The payments ops API (contract-decisions section 8): start a payment (Idempotency-Key, the same
// rules as fundings), read one, list them, and resolve one parked in NEEDS_REVIEW.
import { Router } from 'express';
import { z } from 'zod';
import type { Prisma } from '../../generated/prisma/client.ts';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { createPaymentSchema, paymentSchema, paymentStatuses, resolvePaymentSchema } from '../../domain/payment.ts';
import type { Database } from '../../lib/database.ts';
import { decodeCursor, encodeCursor, listDateSchema, pageSchema } from '../../lib/page-cursor.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import { withPaymentEvents } from '../../payments/payment-service.ts';
import { paymentView } from '../../payments/payment-view.ts';
import { sendProblem } from '../http/problem.ts';
import { opsKeyNameOf } from './ops-auth.ts';
import { validationProblem } from '../http/validation.ts';

export interface OpsPaymentsDependencies {
  database: Database;
  payments: PaymentService;
  /**
   * How long POST /ops/payments waits for the wallet service's create, so that its answer carries
   * the wallet's `paymentId` (the contract's handle for a payment); absent: 3000 ms. The create
   * debits nothing and is one call; under faults the answer goes out without it (`paymentId:
   * null`, the payment's own `id` always works).
   */
  walletIdWaitMs?: number;
}

/** GET /ops/payments: filters and paging. */
export const paymentListQuerySchema = z
  .object({
    status: z.enum(paymentStatuses, { error: `status must be one of ${paymentStatuses.join(', ')}` }).optional(),
    from: listDateSchema('from').optional(),
    to: listDateSchema('to').optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(200).optional(),
  })
  .strict();

/** A page of GET /ops/payments. */
export const paymentPageSchema = pageSchema(paymentSchema);

/** A payment id in a path: anything else is an unknown payment (404). */
export const paymentIdSchema = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'not a payment id');
/** The X-Ops-Actor header: who resolves, as the caller names them (ignored when malformed). */
export const actorSchema = z.string().regex(/^[\x20-\x7e]{1,100}$/);

/** Control characters other than tab and line breaks: PostgreSQL refuses NUL, terminals obey ESC. */
const hasControlCharacter = (text: string) =>
  [...text].some((char) => {
    const code = char.codePointAt(0) ?? 0;
    return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
  });
/** Half of a surrogate pair without its other half: no character at all, stored as U+FFFD. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The note is stored, audited and shown to people: well-formed text (no lone surrogate) only. */
export const resolveBodySchema = resolvePaymentSchema.superRefine((body, ctx) => {
  if (hasControlCharacter(body.note) || loneSurrogate.test(body.note)) {
    ctx.addIssue({ code: 'custom', path: ['note'], message: 'note must be plain text (no control characters or broken unicode)' });
  }
});

export function opsPaymentsRouter(deps: OpsPaymentsDependencies): Router {
  const router = Router();
  const notFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, { status: 404, code: 'PAYMENT_NOT_FOUND', title: 'Not Found', detail: `no payment ${id}` });

  router.post('/payments', async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const parsed = createPaymentSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.payments.start(key.data, parsed.data, opsKeyNameOf(res.locals));
    switch (result.kind) {
      case 'created':
      case 'existing': {
        const payment = (await deps.payments.viewOnceCreated(result.payment.id, deps.walletIdWaitMs ?? 3000)) ?? result.payment;
        res.status(result.kind === 'created' ? 202 : 200).json(payment);
        return;
      }
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different request body',
        });
        return;
      case 'link-not-found':
        sendProblem(res, { status: 422, code: 'LINK_NOT_FOUND', title: 'Unprocessable Content', detail: 'linkId names no link' });
        return;
    }
  });

  router.get('/payments/:paymentId', async (req, res) => {
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    const view = id.success ? await deps.payments.view(id.data) : null;
    if (!view) {
      notFound(res, req.params.paymentId);
      return;
    }
    res.json(view);
  });

  router.get('/payments', async (req, res) => {
    const query = paymentListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const { status, from, to, limit, cursor } = query.data;
    const after = cursor ? decodeCursor(cursor) : null;
    if (cursor && !after) {
      sendProblem(res, { status: 400, code: 'INVALID_CURSOR', title: 'Bad Request', detail: 'cursor is not one this API returned' });
      return;
    }
    const where: Prisma.PaymentWhereInput = {
      ...(status ? { status } : {}),
      ...(from || to ? { createdAt: { ...(from ? { gte: new Date(from) } : {}), ...(to ? { lt: new Date(to) } : {}) } } : {}),
      ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
    };
    const rows = await deps.database.payment.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: limit + 1, include: withPaymentEvents });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const body: z.infer<typeof paymentPageSchema> = { items: page.map(paymentView), nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
    res.json(body);
  });

  router.post('/payments/:paymentId/resolve', async (req, res) => {
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    if (!id.success) {
      notFound(res, req.params.paymentId);
      return;
    }
    const parsed = resolveBodySchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    // Who: the ops key's name (contract-decisions section 12); X-Ops-Actor, when well-formed, is a note after it.
    const actor = actorSchema.safeParse(req.get('x-ops-actor'));
    const resolvedBy = `${opsKeyNameOf(res.locals)}${actor.success ? ` (as ${actor.data})` : ''}`.slice(0, 128);
    const result = await deps.payments.resolve(id.data, parsed.data, resolvedBy);
    switch (result.kind) {
      case 'resolved':
        res.json(result.payment);
        return;
      case 'not-found':
        notFound(res, id.data);
        return;
      case 'not-in-review':
        sendProblem(res, {
          status: 409,
          code: 'PAYMENT_NOT_IN_REVIEW',
          title: 'Conflict',
          detail: `the payment is ${result.status}: only a payment in NEEDS_REVIEW can be resolved`,
        });
        return;
    }
  });

  return router;
}
