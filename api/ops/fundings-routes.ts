// The fundings ops API (contract-decisions section 8): start a funding (Idempotency-Key), read
// one, list them, cancel one before it executes. The rules live in funding-service.ts.
import { Router } from 'express';
import { z } from 'zod';
import type { Prisma } from '../../generated/prisma/client.ts';
import { createFundingSchema, fundingSchema, fundingStatuses, idempotencyKeySchema } from '../../domain/funding.ts';
import type { Database } from '../../lib/database.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import { withFundingEvents } from '../../fundings/funding-service.ts';
import { fundingView } from '../../fundings/funding-view.ts';
import { decodeCursor, encodeCursor, listDateSchema, pageSchema } from '../../lib/page-cursor.ts';
import { sendProblem } from '../http/problem.ts';
import { opsKeyNameOf } from './ops-auth.ts';
import { validationProblem } from '../http/validation.ts';

export interface OpsFundingsDependencies {
  database: Database;
  fundings: FundingService;
}

/** GET /ops/fundings: filters and paging. */
export const fundingListQuerySchema = z
  .object({
    status: z.enum(fundingStatuses, { error: `status must be one of ${fundingStatuses.join(', ')}` }).optional(),
    from: listDateSchema('from').optional(),
    to: listDateSchema('to').optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(200).optional(),
  })
  .strict();

/** A page of GET /ops/fundings. */
export const fundingPageSchema = pageSchema(fundingSchema);

/** A funding id in a path: anything else is an unknown funding (404). */
export const fundingIdSchema = z.uuid();

export function opsFundingsRouter(deps: OpsFundingsDependencies): Router {
  const router = Router();

  router.post('/fundings', async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const parsed = createFundingSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.fundings.start(key.data, parsed.data, opsKeyNameOf(res.locals));
    switch (result.kind) {
      case 'created':
        res.status(202).json(result.funding);
        return;
      case 'existing':
        res.status(200).json(result.funding);
        return;
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different request body',
        });
        return;
      case 'link-not-found':
        sendProblem(res, { status: 422, code: 'LINK_NOT_FOUND', title: 'Unprocessable Content', detail: 'recipient.linkId names no link' });
        return;
    }
  });

  router.get('/fundings/:fundingId', async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const view = id.success ? await deps.fundings.view(id.data) : null;
    if (!view) {
      sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${req.params.fundingId}` });
      return;
    }
    res.json(view);
  });

  router.get('/fundings', async (req, res) => {
    const query = fundingListQuerySchema.safeParse(req.query);
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
    const where: Prisma.FundingWhereInput = {
      ...(status ? { status } : {}),
      ...(from || to ? { createdAt: { ...(from ? { gte: new Date(from) } : {}), ...(to ? { lt: new Date(to) } : {}) } } : {}),
      ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
    };
    const rows = await deps.database.funding.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
      include: withFundingEvents,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const body: z.infer<typeof fundingPageSchema> = { items: page.map(fundingView), nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
    res.json(body);
  });

  router.post('/fundings/:fundingId/cancel', async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const result = id.success ? await deps.fundings.cancel(id.data, opsKeyNameOf(res.locals)) : ({ kind: 'not-found' } as const);
    switch (result.kind) {
      case 'cancelled':
        res.json(result.funding);
        return;
      case 'not-found':
        sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${req.params.fundingId}` });
        return;
      case 'not-cancellable':
        sendProblem(res, {
          status: 409,
          code: 'FUNDING_NOT_CANCELLABLE',
          title: 'Conflict',
          detail: `the funding is ${result.status}: only a funding that has not started executing can be cancelled`,
        });
        return;
    }
  });

  return router;
}
