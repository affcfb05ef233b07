// The fundings ops API (contract-decisions section 8): start a funding (Idempotency-Key), read
// one, list them, cancel one before it executes, resolve one in NEEDS_REVIEW (contract section
// 11). The rules live in funding-service.ts.
import { Router } from 'express';
import { z } from 'zod';
import { createFundingSchema, fundingSchema, fundingStatuses, idempotencyKeySchema, resolveFundingSchema } from '../../domain/funding.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import { sendProblem } from '../http/problem.ts';
import { opsKeyHasScope, opsKeyNameOf } from './ops-auth.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { resolvedByOf } from './ops-actor.ts';

export interface OpsFundingsDependencies {
  fundings: FundingService;
}

/** GET /ops/fundings: filters and paging. */
export const fundingListQuerySchema = listQuerySchema(fundingStatuses);

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
    const result = await deps.fundings.start(key.data, parsed.data, opsKeyNameOf(res.locals), { mayPayOthersBalance: opsKeyHasScope(res.locals, 'admin') });
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
      case 'refused':
        // Nothing stored, no workflow: not enough available on the source, or a limit (which, and what is left).
        sendProblem(res, { status: 422, code: result.code, title: 'Unprocessable Content', detail: result.detail });
        return;
      case 'source-not-recipient':
        sendProblem(res, {
          status: 403,
          code: 'SCOPE_REQUIRED',
          title: 'Forbidden',
          detail: `a USER_BALANCE source pays only that user's own wallet (a TOKEN recipient whose link is theirs); paying it to another recipient needs the admin scope, which the ops API key ${opsKeyNameOf(res.locals)} lacks`,
        });
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
    sendListPage(res, await deps.fundings.list(query.data));
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

  router.post('/fundings/:fundingId/resolve', async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    if (!id.success) {
      sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${req.params.fundingId}` });
      return;
    }
    const parsed = resolveFundingSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.fundings.resolve(id.data, parsed.data, resolvedByOf(req, res));
    switch (result.kind) {
      case 'resolved':
        res.json(result.funding);
        return;
      case 'not-found':
        sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${id.data}` });
        return;
      case 'not-in-review':
        sendProblem(res, {
          status: 409,
          code: 'FUNDING_NOT_IN_REVIEW',
          title: 'Conflict',
          detail: `the funding is ${result.status}: only a funding in NEEDS_REVIEW can be resolved`,
        });
        return;
    }
  });

  return router;
}
