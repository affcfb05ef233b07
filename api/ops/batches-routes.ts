// The funding batches ops API (contract-decisions section 14): create a batch from a JSON body or
// a CSV file (Idempotency-Key; every row checked first), read it, its items and its report,
// approve or reject it (the `approve` scope, never the creator's key), pause, resume, cancel it.
// The rules live in fundings/batch-service.ts. Mounted before the ops API's 16 KiB JSON parser:
// its create route reads bodies of up to 100,000 items.
import type { Router} from 'express';
import express, { type Response } from 'express';
import { z } from 'zod';
import {
  batchItemStatuses,
  batchItemViewSchema,
  batchStates,
  batchViewSchema,
  createBatchFrameSchema,
  MAX_LISTED_ROW_ERRORS,
  type BatchRowError,
} from '../../domain/funding-batch.ts';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { fundingRefusalCodes, partnerUserIdSchema } from '../../domain/ledger.ts';
import type { BatchService, MoveBatchResult } from '../../fundings/batch-service.ts';
import { csvLine } from '../../lib/csv.ts';
import { problemSchema, sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, jsonAnswer, named, problemAnswer, textSchema, type AnyRouteSpec } from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { opsKeyHasScope, opsKeyNameOf } from './ops-key.ts';
import { idempotencyKeyHeader, malformedBodyCodes } from './ops-answers.ts';

export interface OpsBatchesDependencies {
  batches: BatchService;
}

export const batchIdSchema = z.uuid();

/** The CSV form's query: the batch's name, and whose balance pays it (absent: the TREASURY). */
export const batchCsvQuerySchema = z
  .object({
    name: z.string().optional(),
    partnerUserId: partnerUserIdSchema.optional(),
  })
  .strict();

export const batchListQuerySchema = z
  .object({
    state: z.enum(batchStates, { error: `state must be one of ${batchStates.join(', ')}` }).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.uuid({ error: 'cursor must be a batch id from a previous page' }).optional(),
  })
  .strict();

export const batchItemsQuerySchema = z
  .object({
    status: z.enum(batchItemStatuses, { error: `status must be one of ${batchItemStatuses.join(', ')}` }).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: z.string().max(64).optional(),
  })
  .strict();

export const batchReportQuerySchema = z.object({ format: z.literal('csv').default('csv') }).strict();

export const batchPageSchema = z.object({ items: z.array(batchViewSchema), nextCursor: z.string().nullable() });
export const batchItemsPageSchema = z.object({ items: z.array(batchItemViewSchema), nextCursor: z.string().nullable() });

/** A 422: BATCH_INVALID lists every bad row (at most 1000) and counts them; the other codes are plain problems. */
export const batchInvalidSchema = problemSchema.omit({ errors: true }).extend({
  errors: z
    .array(z.object({ row: z.number().int(), reference: z.string().nullable(), field: z.string(), code: z.string(), message: z.string() }))
    .optional(),
  errorCount: z.number().int().optional(),
});

const batchComponent = named('FundingBatch', batchViewSchema);
const batchIdParameter = { batchId: { schema: batchIdSchema, description: 'the batch’s id (not a UUID: 404)' } };
const noSuchBatch = problemAnswer('no such batch', ['BATCH_NOT_FOUND']);
const wrongState = problemAnswer('the batch’s state does not allow this move', ['BATCH_STATE']);

const moveRoute = (action: 'approve' | 'reject' | 'pause' | 'resume' | 'cancel', summary: string, scope: 'approve' | 'fund', extra: Record<`${number}`, ReturnType<typeof problemAnswer>> = {}) =>
  defineRoute({
    method: 'post',
    path: `/ops/funding-batches/{batchId}/${action}`,
    operationId: `${action}FundingBatch`,
    tag: 'batches',
    summary,
    access: { opsScope: scope },
    params: batchIdParameter,
    responses: { '200': jsonAnswer(batchComponent, 'the batch after the move'), '404': noSuchBatch, '409': wrongState, ...extra },
  });

const routes = {
  createFundingBatch: defineRoute({
    method: 'post',
    path: '/ops/funding-batches',
    operationId: 'createFundingBatch',
    tag: 'batches',
    summary: 'Fund many wallets from one request: a JSON body, or a CSV file (reference,recipient_type,recipient,amount) with ?name=',
    access: { opsScope: 'fund' },
    headers: idempotencyKeyHeader,
    query: {
      schema: batchCsvQuerySchema,
      descriptions: { name: 'the CSV form’s batch name', partnerUserId: 'the CSV form’s source: this partner user’s balance (absent: the TREASURY)' },
    },
    body: {
      mediaType: 'application/json',
      schema: named('CreateFundingBatch', createBatchFrameSchema),
      description: '1 to 100,000 items: { reference, recipient, amount } each, every one checked before anything is stored',
      alternatives: { 'text/csv': { jsonSchema: textSchema } },
    },
    responses: {
      '200': jsonAnswer(batchComponent, 'a repeated key with the same request: the same batch'),
      '202': jsonAnswer(batchComponent, 'the batch, stored with its total held: RUNNING, or AWAITING_APPROVAL at or above BATCH_APPROVAL_THRESHOLD'),
      '400': problemAnswer('a missing or malformed key or body; nothing stored', ['IDEMPOTENCY_KEY_INVALID', 'VALIDATION_ERROR', ...malformedBodyCodes]),
      '413': problemAnswer('the body is larger than a batch of 100,000 items can be', ['BODY_TOO_LARGE']),
      '415': problemAnswer('neither application/json nor text/csv', ['UNSUPPORTED_MEDIA_TYPE']),
      '422': {
        description:
          `BATCH_INVALID: what is wrong with which rows (row 1 is the first item; row 0 the request itself); or IDEMPOTENCY_KEY_REUSED, or ${fundingRefusalCodes.join(', ')} (the source does not cover the total, a limit refuses it). Nothing stored.`,
        content: { 'application/problem+json': named('BatchInvalid', batchInvalidSchema) },
      },
    },
  }),
  listFundingBatches: defineRoute({
    method: 'get',
    path: '/ops/funding-batches',
    operationId: 'listFundingBatches',
    tag: 'batches',
    summary: 'Funding batches, newest first, a page at a time',
    access: { opsScope: 'read' },
    query: { schema: batchListQuerySchema, descriptions: { state: 'only batches in this state', limit: 'batches per page (1 to 200, default 50)', cursor: 'the nextCursor of the previous page' } },
    responses: { '200': jsonAnswer(named('FundingBatchPage', batchPageSchema), 'a page'), '400': problemAnswer('a bad filter, or a cursor that names no batch', ['VALIDATION_ERROR']) },
  }),
  getFundingBatch: defineRoute({
    method: 'get',
    path: '/ops/funding-batches/{batchId}',
    operationId: 'getFundingBatch',
    tag: 'batches',
    summary: 'A batch: its state, its items counted and summed by state, its rate and ETA',
    access: { opsScope: 'read' },
    params: batchIdParameter,
    responses: { '200': jsonAnswer(batchComponent, 'the batch'), '404': noSuchBatch },
  }),
  listFundingBatchItems: defineRoute({
    method: 'get',
    path: '/ops/funding-batches/{batchId}/items',
    operationId: 'listFundingBatchItems',
    tag: 'batches',
    summary: 'A batch’s items in reference order, a page at a time',
    access: { opsScope: 'read' },
    params: batchIdParameter,
    query: { schema: batchItemsQuerySchema, descriptions: { status: 'only items in this state (CANCELLED: cancelled before they started)', limit: 'items per page (1 to 1000, default 100)', cursor: 'the nextCursor of the previous page' } },
    responses: { '200': jsonAnswer(named('FundingBatchItemPage', batchItemsPageSchema), 'a page'), '400': problemAnswer('a bad filter', ['VALIDATION_ERROR']), '404': noSuchBatch },
  }),
  getFundingBatchReport: defineRoute({
    method: 'get',
    path: '/ops/funding-batches/{batchId}/report',
    operationId: 'getFundingBatchReport',
    tag: 'batches',
    summary: 'A batch’s report: one CSV row per item (reference, funding id, status, error code, currency, amount)',
    access: { opsScope: 'read' },
    params: batchIdParameter,
    query: { schema: batchReportQuerySchema, descriptions: { format: 'csv (the only format)' } },
    responses: { '200': { description: 'the report', content: { 'text/csv': { jsonSchema: textSchema } } }, '400': problemAnswer('a bad format', ['VALIDATION_ERROR']), '404': noSuchBatch },
  }),
  approveFundingBatch: moveRoute('approve', 'Approve a batch AWAITING_APPROVAL (a key other than its creator’s): it runs', 'approve', {
    '403': problemAnswer('the creator’s own key cannot approve its batch', ['SAME_APPROVER']),
  }),
  rejectFundingBatch: moveRoute('reject', 'Reject a batch AWAITING_APPROVAL: no item starts, its holds are released', 'approve'),
  pauseFundingBatch: moveRoute('pause', 'Pause a RUNNING batch: no new item starts; started items finish', 'fund'),
  resumeFundingBatch: moveRoute('resume', 'Resume a PAUSED batch', 'fund'),
  cancelFundingBatch: moveRoute('cancel', 'Cancel a batch: items not yet started end CANCELLED and release their share; started items finish', 'fund'),
};

export const batchesRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/**
 * 100,000 items of JSON at their largest (64-character references, TOKEN recipients, pretty-printed:
 * 27.9 MB), with room; the CSV form is about half.
 */
const BATCH_BODY_LIMIT = '32mb';

function sendInvalid(res: Response, errors: BatchRowError[], errorCount: number): void {
  res
    .status(422)
    .type('application/problem+json')
    .json({
      type: 'about:blank',
      status: 422,
      code: 'BATCH_INVALID',
      title: 'Unprocessable Content',
      detail: `${errorCount} problem${errorCount === 1 ? '' : 's'} in the batch${errorCount > MAX_LISTED_ROW_ERRORS ? ` (the first ${MAX_LISTED_ROW_ERRORS} listed)` : ''}; nothing was stored`,
      errors,
      errorCount,
    });
}

function sendMove(res: Response, result: MoveBatchResult, batchId: string): void {
  switch (result.kind) {
    case 'moved':
      res.json(result.batch);
      return;
    case 'not-found':
      sendProblem(res, { status: 404, code: 'BATCH_NOT_FOUND', title: 'Not Found', detail: `no funding batch ${batchId}` });
      return;
    case 'same-approver':
      sendProblem(res, { status: 403, code: 'SAME_APPROVER', title: 'Forbidden', detail: 'a batch is approved by a key other than the one that created it' });
      return;
    case 'wrong-state':
      sendProblem(res, { status: 409, code: 'BATCH_STATE', title: 'Conflict', detail: `the batch is ${result.state}: this move is not allowed from there` });
      return;
  }
}

export function opsBatchesRouter(deps: OpsBatchesDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');
  const notFound = (res: Response, id: unknown) => sendProblem(res, { status: 404, code: 'BATCH_NOT_FOUND', title: 'Not Found', detail: `no funding batch ${String(id)}` });

  add(routes.createFundingBatch, express.json({ limit: BATCH_BODY_LIMIT }), express.text({ type: 'text/csv', limit: BATCH_BODY_LIMIT }), async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const csv = req.is('text/csv') === 'text/csv';
    if (!csv && !req.is('application/json')) {
      sendProblem(res, { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', title: 'Unsupported Media Type', detail: 'send application/json or text/csv' });
      return;
    }
    let request: Parameters<BatchService['create']>[1];
    if (csv) {
      const query = batchCsvQuerySchema.safeParse(req.query);
      if (!query.success) {
        validationProblem(res, query.error);
        return;
      }
      request = {
        kind: 'csv',
        text: typeof req.body === 'string' ? req.body : '',
        name: query.data.name,
        ...(query.data.partnerUserId ? { source: { type: 'USER_BALANCE' as const, partnerUserId: query.data.partnerUserId } } : {}),
      };
    } else {
      request = { kind: 'json', body: req.body };
    }
    // As for one funding: a user's balance pays that user's own wallets, unless the key may pay it to others (admin).
    const result = await deps.batches.create(key.data, request, opsKeyNameOf(res.locals), { mayPayOthersBalance: opsKeyHasScope(res.locals, 'admin') });
    switch (result.kind) {
      case 'created':
        res.status(202).json(result.batch);
        return;
      case 'existing':
        res.status(200).json(result.batch);
        return;
      case 'invalid':
        sendInvalid(res, result.errors, result.errorCount);
        return;
      case 'key-reused':
        sendProblem(res, { status: 422, code: 'IDEMPOTENCY_KEY_REUSED', title: 'Unprocessable Content', detail: 'this Idempotency-Key was used with a different batch' });
        return;
      case 'refused':
        sendProblem(res, { status: 422, code: result.code, title: 'Unprocessable Content', detail: result.detail });
        return;
    }
  });

  add(routes.listFundingBatches, async (req, res) => {
    const query = batchListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const page = await deps.batches.list({ limit: query.data.limit, ...(query.data.state ? { state: query.data.state } : {}), ...(query.data.cursor ? { cursor: query.data.cursor } : {}) });
    if (!page) {
      sendProblem(res, { status: 400, code: 'VALIDATION_ERROR', title: 'Bad Request', detail: 'cursor: names no batch (use the nextCursor of the previous page)' });
      return;
    }
    res.json(page);
  });

  add(routes.getFundingBatch, async (req, res) => {
    const id = batchIdSchema.safeParse(req.params.batchId);
    const view = id.success ? await deps.batches.view(id.data) : null;
    if (!view) return notFound(res, req.params.batchId);
    res.json(view);
  });

  add(routes.listFundingBatchItems, async (req, res) => {
    const id = batchIdSchema.safeParse(req.params.batchId);
    if (!id.success) return notFound(res, req.params.batchId);
    const query = batchItemsQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const page = await deps.batches.items(id.data, { limit: query.data.limit, ...(query.data.status ? { status: query.data.status } : {}), ...(query.data.cursor ? { cursor: query.data.cursor } : {}) });
    if (!page) return notFound(res, id.data);
    res.json(page);
  });

  add(routes.getFundingBatchReport, async (req, res) => {
    const id = batchIdSchema.safeParse(req.params.batchId);
    if (!id.success || !(await deps.batches.view(id.data))) return notFound(res, req.params.batchId);
    const query = batchReportQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    res.type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="batch-${id.data}.csv"`);
    res.write(csvLine(['reference', 'funding_id', 'status', 'error_code', 'currency', 'amount']));
    for await (const item of deps.batches.allItems(id.data)) {
      res.write(csvLine([item.reference, item.fundingId, item.status, item.errorCode, item.amount.currency, item.amount.value]));
    }
    res.end();
  });

  const move = (action: (batchId: string, actor: string) => Promise<MoveBatchResult>) => async (req: express.Request, res: Response) => {
    const id = batchIdSchema.safeParse(req.params.batchId);
    if (!id.success) return notFound(res, req.params.batchId);
    sendMove(res, await action(id.data, opsKeyNameOf(res.locals)), id.data);
  };
  add(routes.approveFundingBatch, move((id, actor) => deps.batches.approve(id, actor)));
  add(routes.rejectFundingBatch, move((id, actor) => deps.batches.reject(id, actor)));
  add(routes.pauseFundingBatch, move((id, actor) => deps.batches.pause(id, actor)));
  add(routes.resumeFundingBatch, move((id) => deps.batches.resume(id)));
  add(routes.cancelFundingBatch, move((id, actor) => deps.batches.cancel(id, actor)));

  return router;
}

