// The fundings ops API (contract-decisions section 8): start a funding (Idempotency-Key), read
// one, list them, cancel one before it executes, resolve one in NEEDS_REVIEW (contract section
// 11). The rules live in funding-service.ts. When Temporal cannot take a funding's workflow call
// now, the answer is 503 WORKFLOW_UNAVAILABLE with Retry-After and words true for what the request
// left behind (ops-answers.ts); a cancel is done in the database all the same (200).
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import { fundingRefusalCodes } from '../../domain/ledger.ts';
import {
  createFundingSchema,
  fundingSchema,
  fundingStatuses,
  idempotencyKeySchema,
  resolveFundingSchema,
} from '../../domain/funding.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import { sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, jsonAnswer, named, problemAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { opsKeyHasScope, opsKeyNameOf } from './ops-key.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { actorHeader, resolvedByOf } from './ops-actor.ts';
import { refusalWords, startedWords } from '../../lib/workflow-unavailable.ts';
import {
  badListQueryAnswer,
  idempotencyKeyHeader,
  listFilterDescriptions,
  malformedBodyCodes,
  sendWorkflowUnavailable,
  workflowUnavailableAnswer,
} from './ops-answers.ts';

export interface OpsFundingsDependencies {
  fundings: FundingService;
}

/** GET /ops/fundings: filters and paging. */
export const fundingListQuerySchema = listQuerySchema(fundingStatuses);

/** A page of GET /ops/fundings. */
export const fundingPageSchema = pageSchema(fundingSchema);

/** A funding id in a path: anything else is an unknown funding (404). */
export const fundingIdSchema = idSchema;

const fundingComponent = named('Funding', fundingSchema);
const fundingIdParameter = {
  fundingId: { schema: fundingIdSchema, description: 'the funding’s id (not a UUID: 404)' },
};
const noSuchFunding = problemAnswer('no such funding', ['FUNDING_NOT_FOUND']);

const routes = {
  createFunding: defineRoute({
    method: 'post',
    path: '/ops/fundings',
    operationId: 'createFunding',
    tag: 'fundings',
    summary: 'Fund a wallet: by cash-in code or to a linked wallet',
    access: { opsScope: 'fund' },
    headers: idempotencyKeyHeader,
    body: { mediaType: 'application/json', schema: named('CreateFunding', createFundingSchema) },
    responses: {
      '200': jsonAnswer(fundingComponent, 'a repeated key with the same body: the same funding'),
      '202': jsonAnswer(fundingComponent, 'a new key: the funding, started'),
      '400': problemAnswer('a missing or malformed key or body; nothing stored', [
        'IDEMPOTENCY_KEY_INVALID',
        'VALIDATION_ERROR',
        ...malformedBodyCodes,
      ]),
      '422': problemAnswer(
        'the key was used with another body, `recipient.linkId` names no link, the source’s available does not cover the amount, or a limit refuses it (its detail names the limit and what is left); nothing stored, no workflow',
        ['IDEMPOTENCY_KEY_REUSED', 'LINK_NOT_FOUND', ...fundingRefusalCodes],
      ),
      '503': workflowUnavailableAnswer(
        'the funding is stored with its hold (its id is in the detail) but its workflow could not be started (or its start was not answered: it may have started); the same request with the same key answers it and starts it (never a new key: that would be a second funding), and if none comes the sweep starts it once it has been idle RECONCILE_AFTER_SECONDS',
      ),
    },
  }),
  listFundings: defineRoute({
    method: 'get',
    path: '/ops/fundings',
    operationId: 'listFundings',
    tag: 'fundings',
    summary: 'Fundings, newest first, a page at a time',
    access: { opsScope: 'read' },
    query: { schema: fundingListQuerySchema, descriptions: listFilterDescriptions },
    responses: { '200': jsonAnswer(named('FundingPage', fundingPageSchema), 'a page'), '400': badListQueryAnswer },
  }),
  getFunding: defineRoute({
    method: 'get',
    path: '/ops/fundings/{fundingId}',
    operationId: 'getFunding',
    tag: 'fundings',
    summary: 'A funding and its timeline',
    access: { opsScope: 'read' },
    params: fundingIdParameter,
    responses: { '200': jsonAnswer(fundingComponent, 'the funding'), '404': noSuchFunding },
  }),
  cancelFunding: defineRoute({
    method: 'post',
    path: '/ops/fundings/{fundingId}/cancel',
    operationId: 'cancelFunding',
    tag: 'fundings',
    summary: 'Cancel a funding that has not started executing (it ends FAILED, code CANCELLED)',
    access: { opsScope: 'fund' },
    params: fundingIdParameter,
    responses: {
      '200': jsonAnswer(fundingComponent, 'cancelled'),
      '404': noSuchFunding,
      '409': problemAnswer('the funding is executing or final', ['FUNDING_NOT_CANCELLABLE']),
    },
  }),
  resolveFunding: defineRoute({
    method: 'post',
    path: '/ops/fundings/{fundingId}/resolve',
    operationId: 'resolveFunding',
    tag: 'fundings',
    summary:
      'Resolve a funding parked in NEEDS_REVIEW (contract section 11), after checking with the wallet operator: APPROVED posts it, FAILED means nothing was executed',
    access: { opsScope: 'resolve' },
    params: fundingIdParameter,
    headers: actorHeader(
      'who resolves (recorded with the key’s identity in `review.resolution.by`); ignored when malformed',
    ),
    body: {
      mediaType: 'application/json',
      schema: named('ResolveFunding', resolveFundingSchema),
      description: 'the outcome and why (plain text: no control characters or broken unicode)',
    },
    responses: {
      '200': jsonAnswer(fundingComponent, 'resolved'),
      '400': problemAnswer('a malformed body', ['VALIDATION_ERROR', ...malformedBodyCodes]),
      '404': noSuchFunding,
      '409': problemAnswer(
        'the funding is not in NEEDS_REVIEW, or APPROVED for a funding walletflow never executed (no transfer of its own)',
        ['FUNDING_NOT_IN_REVIEW', 'NEVER_EXECUTED'],
      ),
      '503': workflowUnavailableAnswer(
        'the funding is still NEEDS_REVIEW, not resolved (after a time-out its workflow may still take the resolution: read the funding first)',
      ),
    },
  }),
};

/** The fundings routes, as the document lists them. */
export const fundingsRoutes: readonly AnyRouteSpec[] = Object.values(routes);

export function opsFundingsRouter(deps: OpsFundingsDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');

  add(routes.createFunding, async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, {
        status: 400,
        code: 'IDEMPOTENCY_KEY_INVALID',
        title: 'Bad Request',
        detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key',
      });
      return;
    }
    const parsed = createFundingSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.fundings.start(key.data, parsed.data, opsKeyNameOf(res.locals), {
      mayPayOthersBalance: opsKeyHasScope(res.locals, 'admin'),
    });
    switch (result.kind) {
      case 'created':
        res.status(202).json(result.funding);
        return;
      case 'existing':
        res.status(200).json(result.funding);
        return;
      case 'not-started':
        sendWorkflowUnavailable(
          res,
          result.refusal,
          `${
            result.storedBy === 'this-request'
              ? `the funding ${result.funding.fundingId} is stored, with its hold, but its workflow could not be started (${refusalWords[result.refusal.reason]}): ${startedWords(result.refusal, 'it has not started.')}`
              : `the funding ${result.funding.fundingId} was stored, with its hold, by the first request with this Idempotency-Key; its workflow could not be started or found running now (${refusalWords[result.refusal.reason]}).`
          } Send the same request with the same Idempotency-Key again after Retry-After: it answers this funding and starts it (a new key would be a second funding). If none comes, the sweep starts it.`,
        );
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
        sendProblem(res, {
          status: 422,
          code: 'LINK_NOT_FOUND',
          title: 'Unprocessable Content',
          detail: 'recipient.linkId names no link',
        });
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

  add(routes.getFunding, async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const view = id.success ? await deps.fundings.view(id.data) : null;
    if (!view) {
      sendProblem(res, {
        status: 404,
        code: 'FUNDING_NOT_FOUND',
        title: 'Not Found',
        detail: `no funding ${req.params.fundingId}`,
      });
      return;
    }
    res.json(view);
  });

  add(routes.listFundings, async (req, res) => {
    const query = fundingListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    sendListPage(res, await deps.fundings.list(query.data));
  });

  add(routes.cancelFunding, async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const result = id.success
      ? await deps.fundings.cancel(id.data, opsKeyNameOf(res.locals))
      : ({ kind: 'not-found' } as const);
    switch (result.kind) {
      case 'cancelled':
        res.json(result.funding);
        return;
      case 'not-found':
        sendProblem(res, {
          status: 404,
          code: 'FUNDING_NOT_FOUND',
          title: 'Not Found',
          detail: `no funding ${req.params.fundingId}`,
        });
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

  add(routes.resolveFunding, async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    if (!id.success) {
      sendProblem(res, {
        status: 404,
        code: 'FUNDING_NOT_FOUND',
        title: 'Not Found',
        detail: `no funding ${req.params.fundingId}`,
      });
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
        sendProblem(res, {
          status: 404,
          code: 'FUNDING_NOT_FOUND',
          title: 'Not Found',
          detail: `no funding ${id.data}`,
        });
        return;
      case 'not-in-review':
        sendProblem(res, {
          status: 409,
          code: 'FUNDING_NOT_IN_REVIEW',
          title: 'Conflict',
          detail: `the funding is ${result.status}: only a funding in NEEDS_REVIEW can be resolved`,
        });
        return;
      case 'never-executed':
        sendProblem(res, {
          status: 409,
          code: 'NEVER_EXECUTED',
          title: 'Conflict',
          detail:
            'walletflow never sent an execute for this funding (it has no transfer of its own: the wallet’s create answer did not match the request), so nothing was moved: only FAILED resolves it',
        });
        return;
      case 'workflow-unavailable':
        sendWorkflowUnavailable(
          res,
          result.refusal,
          result.refusal.mayHaveBeenTaken
            ? `the funding's workflow did not confirm the resolution (${refusalWords[result.refusal.reason]}): it may still take it. Read the funding after Retry-After; while it is still NEEDS_REVIEW, send the same request again.`
            : `the funding's workflow cannot take a resolution now (${refusalWords[result.refusal.reason]}): nothing was changed, the funding is still NEEDS_REVIEW. Send the same request again after Retry-After.`,
        );
        return;
    }
  });

  return router;
}
