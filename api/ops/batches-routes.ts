// The funding batches ops API (contract-decisions section 14): create a batch from a JSON body or
// a CSV file (Idempotency-Key; every row checked first), read it, its items and its report,
// approve or reject it (the `approve` scope, never the creator's key), pause, resume, cancel it.
// The rules live in fundings/batch-service.ts. Mounted before the ops API's 16 KiB JSON parser:
// its create route reads its body itself, as a stream (fundings/batch-upload.ts), up to 100,000
// items, refusing what cannot be a batch while it is read.
import { idSchema } from '../../domain/ids.ts';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import {
  batchItemStatuses,
  batchReferencePattern,
  batchItemViewSchema,
  batchStates,
  batchViewSchema,
  createBatchFrameSchema,
  MAX_LISTED_ROW_ERRORS,
  rowErrorAsShown,
  type BatchRowError,
} from '../../domain/funding-batch.ts';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { fundingRefusalCodes, partnerUserIdSchema, type FundingSource } from '../../domain/ledger.ts';
import type { BatchService, MoveBatchResult } from '../../fundings/batch-service.ts';
import { batchReport } from '../../fundings/batch-report.ts';
import { BATCH_BODY_LIMIT } from '../../fundings/batch-upload.ts';
import type { CsvStreams } from '../http/csv-stream.ts';
import { problemSchema, sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import {
  defineRoute,
  jsonAnswer,
  named,
  problemAnswer,
  textSchema,
  type AnswerSpec,
  type AnyRouteSpec,
} from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { opsKeyHasScope, opsKeyNameOf } from './ops-key.ts';
import { refusalWords, startedWords } from '../../lib/workflow-unavailable.ts';
import {
  idempotencyKeyHeader,
  malformedBodyCodes,
  sendWorkflowUnavailable,
  workflowUnavailableAnswer,
} from './ops-answers.ts';

export interface OpsBatchesDependencies {
  batches: BatchService;
  /** How a report is streamed: at the client's pace, stopped when it goes away. */
  csvStreams: CsvStreams;
}

export const batchIdSchema = idSchema;

/**
 * The CSV form's query: the batch's name, and whose balance pays it: `source` TREASURY (the
 * default) or USER_BALANCE with `partnerUserId`; a `partnerUserId` alone means USER_BALANCE.
 */
export const batchCsvQuerySchema = z
  .object({
    name: z.string().optional(),
    source: z.enum(['TREASURY', 'USER_BALANCE'], { error: 'source must be TREASURY or USER_BALANCE' }).optional(),
    partnerUserId: partnerUserIdSchema.optional(),
  })
  .strict()
  .superRefine((query, ctx) => {
    if (query.source === 'USER_BALANCE' && query.partnerUserId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['partnerUserId'],
        message: 'partnerUserId is required with source=USER_BALANCE: whose balance pays the batch',
      });
    }
    if (query.source === 'TREASURY' && query.partnerUserId !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['partnerUserId'],
        message:
          "partnerUserId names a user's balance: not with source=TREASURY (leave it out, or say source=USER_BALANCE)",
      });
    }
  });

/**
 * A JSON batch's query: none. Its name and its source are in its body; `name`, `source` and `partnerUserId` are the CSV
 * form's, and beside a JSON body they are refused rather than ignored (a JSON batch sent with
 * `?source=USER_BALANCE&partnerUserId=…` and no source in its body was paid by the treasury).
 */
const jsonBatchQuerySchema = z.record(z.string(), z.unknown()).superRefine((query, ctx) => {
  for (const key of Object.keys(query))
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: `a query parameter of the CSV form: a JSON batch gives its name and source in its body`,
    });
});

/** The funding source a CSV form's query names (absent: the TREASURY, as for JSON). */
export function csvQuerySource(query: z.infer<typeof batchCsvQuerySchema>): FundingSource | undefined {
  return query.partnerUserId === undefined
    ? query.source === 'TREASURY'
      ? { type: 'TREASURY' }
      : undefined
    : { type: 'USER_BALANCE', partnerUserId: query.partnerUserId };
}

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
    cursor: z
      .string()
      .regex(batchReferencePattern, 'cursor must be the nextCursor of a previous page (an item’s reference)')
      .optional(),
  })
  .strict();

export const batchReportQuerySchema = z.object({ format: z.literal('csv').default('csv') }).strict();

export const batchPageSchema = z.object({ items: z.array(batchViewSchema), nextCursor: z.string().nullable() });
export const batchItemsPageSchema = z.object({
  items: z.array(batchItemViewSchema),
  nextCursor: z.string().nullable(),
});

/** A 422: BATCH_INVALID lists every bad row (at most 1000) and counts them; the other codes are plain problems. */
export const batchInvalidSchema = problemSchema.omit({ errors: true }).extend({
  errors: z
    .array(
      z.object({
        row: z.number().int(),
        reference: z.string().nullable(),
        field: z.string(),
        code: z.string(),
        message: z.string(),
      }),
    )
    .optional(),
  errorCount: z.number().int().optional(),
});

const batchComponent = named('FundingBatch', batchViewSchema);
const batchIdParameter = { batchId: { schema: batchIdSchema, description: 'the batch’s id (not a UUID: 404)' } };
const noSuchBatch = problemAnswer('no such batch', ['BATCH_NOT_FOUND']);
const wrongState = problemAnswer('the batch’s state does not allow this move', ['BATCH_STATE']);

const moveRoute = (
  action: 'approve' | 'reject' | 'pause' | 'resume' | 'cancel',
  summary: string,
  scope: 'approve' | 'fund',
  extra: Record<`${number}`, AnswerSpec> = {},
) =>
  defineRoute({
    method: 'post',
    path: `/ops/funding-batches/{batchId}/${action}`,
    operationId: `${action}FundingBatch`,
    tag: 'batches',
    summary,
    access: { opsScope: scope },
    params: batchIdParameter,
    responses: {
      '200': jsonAnswer(batchComponent, 'the batch after the move'),
      '404': noSuchBatch,
      '409': wrongState,
      ...extra,
    },
  });

const routes = {
  createFundingBatch: defineRoute({
    method: 'post',
    path: '/ops/funding-batches',
    operationId: 'createFundingBatch',
    tag: 'batches',
    summary:
      'Fund many wallets from one request: a JSON body, or a CSV file (reference,recipient_type,recipient,amount) with ?name=',
    access: { opsScope: 'fund' },
    headers: idempotencyKeyHeader,
    query: {
      schema: batchCsvQuerySchema,
      descriptions: {
        name: 'the CSV form’s batch name',
        source: 'the CSV form’s source: TREASURY (the default) or USER_BALANCE (with partnerUserId)',
        partnerUserId:
          'the CSV form’s USER_BALANCE source: this partner user’s balance (alone, it means source=USER_BALANCE; not with source=TREASURY)',
      },
    },
    body: {
      mediaType: 'application/json',
      schema: named('CreateFundingBatch', createBatchFrameSchema),
      description:
        '1 to 100,000 items: { reference, recipient, amount } each, every one checked before anything is stored',
      alternatives: { 'text/csv': { jsonSchema: textSchema } },
    },
    responses: {
      '200': jsonAnswer(batchComponent, 'a repeated key with the same request: the same batch'),
      '202': jsonAnswer(
        batchComponent,
        'the batch, stored with its total held: RUNNING, or AWAITING_APPROVAL at or above BATCH_APPROVAL_THRESHOLD',
      ),
      '400': problemAnswer('a missing or malformed key or body; nothing stored', [
        'IDEMPOTENCY_KEY_INVALID',
        'VALIDATION_ERROR',
        ...malformedBodyCodes,
      ]),
      '413': problemAnswer(
        'the body is larger than a batch of 100,000 items can be (32 MiB): refused as soon as it passes that, the rest not read',
        ['BODY_TOO_LARGE'],
      ),
      '415': problemAnswer(
        'neither application/json nor text/csv, or a Content-Encoding or charset other than identity and UTF-8',
        ['UNSUPPORTED_MEDIA_TYPE', 'UNSUPPORTED_CONTENT_ENCODING', 'UNSUPPORTED_CHARSET'],
      ),
      '503': workflowUnavailableAnswer(
        'the batch is stored with its total held, RUNNING (its id is in the detail), but its runner could not be started (or its start was not answered: it may have started); the same request with the same key answers it and starts the runner (never a new key: that would be a second batch), and if none comes the sweep starts it at its next run. OVERLOADED is also the answer when the batch uploads being read and stored hold the memory set aside for uploads',
      ),
      '422': {
        description: `BATCH_INVALID: what is wrong with which rows (row 1 is the first item; row 0 the request itself), each run of seven digits in what it repeats masked to its last two (it may be a cash-in code); a reference holding its row's own cash-in code is INVALID. A body that cannot be a batch is refused while it is read, nothing past the problem read: its 100,001st item, a CSV row with more fields than the header or a line over 1024 characters, JSON of a shape no batch has (a member other than name, source and items; items that are not an array; an item over 4 KiB, a name or source over 8 KiB, any string, number, key or run of spaces over 4 KiB; nesting deeper than 5). Or IDEMPOTENCY_KEY_REUSED, or ${fundingRefusalCodes.join(', ')} (the source does not cover the total, a limit refuses it). Nothing stored.`,
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
    query: {
      schema: batchListQuerySchema,
      descriptions: {
        state: 'only batches in this state',
        limit: 'batches per page (1 to 200, default 50)',
        cursor: 'the nextCursor of the previous page',
      },
    },
    responses: {
      '200': jsonAnswer(named('FundingBatchPage', batchPageSchema), 'a page'),
      '400': problemAnswer('a bad filter, or a cursor that names no batch', ['VALIDATION_ERROR']),
    },
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
    query: {
      schema: batchItemsQuerySchema,
      descriptions: {
        status: 'only items in this state (CANCELLED: cancelled before they started)',
        limit: 'items per page (1 to 1000, default 100)',
        cursor: 'the nextCursor of the previous page',
      },
    },
    responses: {
      '200': jsonAnswer(named('FundingBatchItemPage', batchItemsPageSchema), 'a page'),
      '400': problemAnswer('a bad filter', ['VALIDATION_ERROR']),
      '404': noSuchBatch,
    },
  }),
  getFundingBatchReport: defineRoute({
    method: 'get',
    path: '/ops/funding-batches/{batchId}/report',
    operationId: 'getFundingBatchReport',
    tag: 'batches',
    summary:
      'A batch’s report: one CSV row per item (reference, funding id, status, error code, currency, amount), streamed at the client’s pace (a client that reads nothing for 2 minutes is cut off)',
    access: { opsScope: 'read' },
    params: batchIdParameter,
    query: { schema: batchReportQuerySchema, descriptions: { format: 'csv (the only format)' } },
    responses: {
      '200': { description: 'the report', content: { 'text/csv': { jsonSchema: textSchema } } },
      '400': problemAnswer('a bad format', ['VALIDATION_ERROR']),
      '404': noSuchBatch,
    },
  }),
  approveFundingBatch: moveRoute(
    'approve',
    'Approve a batch AWAITING_APPROVAL (a key other than its creator’s): it runs',
    'approve',
    {
      '200': jsonAnswer(
        batchComponent,
        'approved: RUNNING (a runner Temporal cannot start just now is started by the sweep at its next run; the approval stands)',
      ),
      '403': problemAnswer('the creator’s own key cannot approve its batch', ['SAME_APPROVER']),
    },
  ),
  rejectFundingBatch: moveRoute(
    'reject',
    'Reject a batch AWAITING_APPROVAL: no item starts, its holds are released',
    'approve',
  ),
  pauseFundingBatch: moveRoute('pause', 'Pause a RUNNING batch: no new item starts; started items finish', 'fund'),
  resumeFundingBatch: moveRoute('resume', 'Resume a PAUSED batch', 'fund'),
  cancelFundingBatch: moveRoute(
    'cancel',
    'Cancel a batch: items not yet started end CANCELLED and release their share; started items finish',
    'fund',
  ),
};

export const batchesRoutes: readonly AnyRouteSpec[] = Object.values(routes);

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
      errors: errors.map(rowErrorAsShown),
      errorCount,
    });
}

/**
 * A body this route will not read, known from its headers: longer than a batch can be (its
 * Content-Length), compressed (a compressed body's size says nothing of what it holds), or in a
 * charset other than UTF-8.
 */
function unreadableBody(req: Request): Parameters<typeof sendProblem>[1] | null {
  const length = Number(req.get('content-length') ?? 0);
  if (length > BATCH_BODY_LIMIT)
    return {
      status: 413,
      code: 'BODY_TOO_LARGE',
      title: 'Content Too Large',
      detail: `the body must be at most ${BATCH_BODY_LIMIT} bytes (a batch of 100,000 items); nothing was stored`,
    };
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity')
    return {
      status: 415,
      code: 'UNSUPPORTED_CONTENT_ENCODING',
      title: 'Unsupported Media Type',
      detail: 'send the batch uncompressed (no Content-Encoding)',
    };
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.get('content-type') ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    return {
      status: 415,
      code: 'UNSUPPORTED_CHARSET',
      title: 'Unsupported Media Type',
      detail: 'the body must be UTF-8',
    };
  return null;
}

/**
 * After an answer given before the body's end (a refusal while it was read): the rest of the body
 * is read and dropped, neither parsed nor held, so a client still sending gets the answer rather
 * than a connection reset under its feet; past BATCH_BODY_LIMIT more bytes the connection is
 * closed. (The upload's reader stopped pulling from the stream: its listener goes.)
 */
function discardRest(req: Request): void {
  if (req.complete || req.destroyed) return;
  let dropped = 0;
  req.removeAllListeners('readable');
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > BATCH_BODY_LIMIT) req.socket.destroy();
  });
  req.resume();
}

function sendMove(res: Response, result: MoveBatchResult, batchId: string): void {
  switch (result.kind) {
    case 'moved':
      res.json(result.batch);
      return;
    case 'not-found':
      sendProblem(res, {
        status: 404,
        code: 'BATCH_NOT_FOUND',
        title: 'Not Found',
        detail: `no funding batch ${batchId}`,
      });
      return;
    case 'same-approver':
      sendProblem(res, {
        status: 403,
        code: 'SAME_APPROVER',
        title: 'Forbidden',
        detail: 'a batch is approved by a key other than the one that created it',
      });
      return;
    case 'wrong-state':
      sendProblem(res, {
        status: 409,
        code: 'BATCH_STATE',
        title: 'Conflict',
        detail: `the batch is ${result.state}: this move is not allowed from there`,
      });
      return;
  }
}

export function opsBatchesRouter(deps: OpsBatchesDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');
  const notFound = (res: Response, id: unknown) =>
    sendProblem(res, {
      status: 404,
      code: 'BATCH_NOT_FOUND',
      title: 'Not Found',
      detail: `no funding batch ${String(id)}`,
    });

  add(routes.createFundingBatch, async (req, res) => {
    const refuse = (problem: Parameters<typeof sendProblem>[1]) => {
      sendProblem(res, problem);
      discardRest(req);
    };
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      refuse({
        status: 400,
        code: 'IDEMPOTENCY_KEY_INVALID',
        title: 'Bad Request',
        detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key',
      });
      return;
    }
    const csv = req.is('text/csv') === 'text/csv';
    if (!csv && !req.is('application/json')) {
      refuse({
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
        title: 'Unsupported Media Type',
        detail: 'send application/json or text/csv',
      });
      return;
    }
    const unreadable = unreadableBody(req);
    if (unreadable) {
      refuse(unreadable);
      return;
    }
    let request: Parameters<BatchService['create']>[1];
    if (csv) {
      const query = batchCsvQuerySchema.safeParse(req.query);
      if (!query.success) {
        validationProblem(res, query.error);
        discardRest(req);
        return;
      }
      const source = csvQuerySource(query.data);
      request = { kind: 'csv', body: req, name: query.data.name, ...(source ? { source } : {}) };
    } else {
      const query = jsonBatchQuerySchema.safeParse(req.query);
      if (!query.success) {
        validationProblem(res, query.error);
        discardRest(req);
        return;
      }
      request = { kind: 'json', body: req };
    }
    // As for one funding: a user's balance pays that user's own wallets, unless the key may pay it to others (admin).
    const result = await deps.batches.create(key.data, request, opsKeyNameOf(res.locals), {
      mayPayOthersBalance: opsKeyHasScope(res.locals, 'admin'),
    });
    switch (result.kind) {
      case 'created':
        res.status(202).json(result.batch);
        return;
      case 'existing':
        res.status(200).json(result.batch);
        return;
      case 'not-started':
        sendWorkflowUnavailable(
          res,
          result.refusal,
          `${
            result.storedBy === 'this-request'
              ? `the batch ${result.batch.batchId} is stored with its total held, RUNNING, but its runner could not be started (${refusalWords[result.refusal.reason]}): ${startedWords(result.refusal, 'no item has started.')}`
              : `the batch ${result.batch.batchId} was stored, with its total held, by the first request with this Idempotency-Key; its runner could not be started or found running now (${refusalWords[result.refusal.reason]}).`
          } Send the same request with the same Idempotency-Key again after Retry-After: it answers this batch and starts its runner (a new key would be a second batch). If none comes, the sweep starts it.`,
        );
        return;
      case 'invalid':
        sendInvalid(res, result.errors, result.errorCount);
        discardRest(req);
        return;
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different batch',
        });
        return;
      case 'refused':
        sendProblem(res, { status: 422, code: result.code, title: 'Unprocessable Content', detail: result.detail });
        return;
      case 'too-large':
        refuse({
          status: 413,
          code: 'BODY_TOO_LARGE',
          title: 'Content Too Large',
          detail: `the body must be at most ${result.maxBytes} bytes (a batch of 100,000 items); nothing was stored`,
        });
        return;
      case 'malformed':
        refuse({ status: 400, code: 'MALFORMED_JSON', title: 'Bad Request', detail: result.message });
        return;
      case 'aborted':
        refuse({
          status: 400,
          code: 'REQUEST_ABORTED',
          title: 'Bad Request',
          detail: 'the body was not sent completely; nothing was stored',
        });
        return;
      case 'overloaded':
        res.setHeader('Retry-After', String(result.retryAfterSeconds));
        refuse({
          status: 503,
          code: 'OVERLOADED',
          title: 'Service Unavailable',
          detail: `${result.detail}; send the same request (same Idempotency-Key) again after Retry-After`,
        });
        return;
      case 'no-longer-allowed':
        // A key's scopes are the process's for its life: only a console session's end can answer this (not asked).
        refuse({ status: 403, code: 'SCOPE_REQUIRED', title: 'Forbidden', detail: 'nothing was stored' });
        return;
      default:
        result satisfies never;
    }
  });

  add(routes.listFundingBatches, async (req, res) => {
    const query = batchListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const page = await deps.batches.list({
      limit: query.data.limit,
      ...(query.data.state ? { state: query.data.state } : {}),
      ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
    });
    if (!page) {
      sendProblem(res, {
        status: 400,
        code: 'VALIDATION_ERROR',
        title: 'Bad Request',
        detail: 'cursor: names no batch (use the nextCursor of the previous page)',
      });
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
    const page = await deps.batches.items(id.data, {
      limit: query.data.limit,
      ...(query.data.status ? { status: query.data.status } : {}),
      ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
    });
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
    await deps.csvStreams.send(res, batchReport(deps.batches, id.data), {
      'Content-Disposition': `attachment; filename="batch-${id.data}.csv"`,
    });
  });

  const move =
    (action: (batchId: string, actor: string) => Promise<MoveBatchResult>) => async (req: Request, res: Response) => {
      const id = batchIdSchema.safeParse(req.params.batchId);
      if (!id.success) return notFound(res, req.params.batchId);
      sendMove(res, await action(id.data, opsKeyNameOf(res.locals)), id.data);
    };
  add(
    routes.approveFundingBatch,
    move((id, actor) => deps.batches.approve(id, actor)),
  );
  add(
    routes.rejectFundingBatch,
    move((id, actor) => deps.batches.reject(id, actor)),
  );
  add(
    routes.pauseFundingBatch,
    move((id, actor) => deps.batches.pause(id, actor)),
  );
  add(
    routes.resumeFundingBatch,
    move((id, actor) => deps.batches.resume(id, actor)),
  );
  add(
    routes.cancelFundingBatch,
    move((id, actor) => deps.batches.cancel(id, actor)),
  );

  return router;
}
