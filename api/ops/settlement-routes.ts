// The day's settlement in the ops API (contract-decisions section 10): GET /ops/settlements/{date}
// serves the day's stored report a page at a time (JSON) or whole as a stream (CSV), or, while the
// day's run goes (the first GET of a day starts it), waits up to 5 s and answers 202 with its
// progress and Retry-After; POST /ops/settlements/{date}/runs starts a fresh run (409 while one
// runs). The rules are in api/ops/settlement-service.ts and ledger/.
import type { Response, Router } from 'express';
import { z } from 'zod';
import { settlementDateSchema, settlementProgressSchema, settlementSchema } from '../../domain/ledger.ts';
import { clientGone } from '../http/client-gone.ts';
import type { CsvStreams } from '../http/csv-stream.ts';
import type { SettlementRun } from '../../ledger/settlement-runs.ts';
import { sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import {
  defineRoute,
  header,
  jsonAnswer,
  named,
  problemAnswer,
  retryAfterHeader,
  textSchema,
  type AnyRouteSpec,
} from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { resolvedByOf } from './ops-actor.ts';
import { workflowUnavailableAnswer } from './ops-answers.ts';
import { decodeSettlementCursor, SETTLEMENT_COMPLETE_HEADER, type SettlementService } from './settlement-service.ts';

/**
 * A day's finished report as a CSV file: its name, whether it is the whole day (Settlement-Complete), then its rows as
 * the client takes them (to a HEAD only its headers). The ops route's and the console's download alike.
 */
export async function sendSettlementCsv(
  res: Response,
  csvStreams: CsvStreams,
  settlements: Pick<SettlementService, 'csv'>,
  run: SettlementRun,
): Promise<void> {
  await csvStreams.send(res, settlements.csv(run), {
    'Content-Disposition': `attachment; filename="settlement-${run.date}.csv"`,
    [SETTLEMENT_COMPLETE_HEADER]: String(run.wholeDay),
  });
}

export interface OpsSettlementsDependencies {
  /** Absent: settlement is not configured (501). */
  settlements?: SettlementService;
  /** Every streamed CSV's writer (back-pressure, a client gone stops the reads). */
  csvStreams: CsvStreams;
}

/** The JSON report's items per page, at most and by default. */
export const SETTLEMENT_PAGE_LIMIT = 1000;

export const settlementQuerySchema = z
  .object({
    format: z.enum(['json', 'csv']).default('json'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(SETTLEMENT_PAGE_LIMIT)
      .optional()
      .meta({ description: 'items per page of the JSON report (1 to 1000, default 1000)' }),
    cursor: z
      .string()
      .max(200)
      .refine((cursor) => decodeSettlementCursor(cursor) !== null, 'cursor must be the nextCursor of a previous page')
      .optional()
      .meta({ description: 'the `nextCursor` of the page before: every page of a report is the same run’s' }),
  })
  .strict()
  .refine(
    (query) => query.format === 'json' || (query.limit === undefined && query.cursor === undefined),
    'limit and cursor page the JSON report; the CSV comes whole',
  );

const progressComponent = named('SettlementProgress', settlementProgressSchema);
const dateParameter = { date: { schema: settlementDateSchema, description: 'the day, YYYY-MM-DD, in SETTLEMENT_TZ' } };
const running = (description: string) =>
  jsonAnswer(progressComponent, description, { 'Retry-After': retryAfterHeader });
const notStarted = problemAnswer('the day has not begun in SETTLEMENT_TZ: nothing to settle yet', [
  'SETTLEMENT_DAY_NOT_STARTED',
]);
const notConfigured = problemAnswer('settlement is not configured', ['NOT_CONFIGURED']);
const runNotStarted = workflowUnavailableAnswer(
  'the day’s run is recorded but its workflow could not be started (or its start was not answered: it may have started); the next GET of the day starts it',
);

// Reading the settlement, and asking for it again, are `read`: a run reads the wallet and the books, it moves nothing.
const routes = {
  getSettlement: defineRoute({
    method: 'get',
    path: '/ops/settlements/{date}',
    operationId: 'getSettlement',
    tag: 'ledger',
    summary:
      'A day’s (SETTLEMENT_TZ) approved fundings and succeeded payments against the wallet’s records and the ledger',
    description:
      'The day is settled by a run (a workflow) that the first GET of the day starts; while it runs, a GET waits up to 5 s, then answers 202 with its progress and `Retry-After` (for `?format=csv` too). Once it has finished, its stored report is served: the JSON a page of `items` at a time (`limit`, `cursor` from `nextCursor`), the CSV whole, streamed. A POST to `…/runs` starts a fresh run; the report before it is served until it has finished. Today’s report is the day so far (`complete: false`). At most `SETTLEMENT_MAX_RUNS` runs (of any days) go at once: a GET or POST that would start one more is answered 503 `OVERLOADED` with `Retry-After`, nothing recorded. Yesterday’s run, asked for within 2 minutes after midnight, waits for them to pass before it reads (a write stamped before midnight may still commit): until then a 202 with `checked` 0 and `Retry-After` the seconds left.',
    access: { opsScope: 'read' },
    params: dateParameter,
    query: { schema: settlementQuerySchema },
    responses: {
      '200': {
        description:
          'the stored report: its counts, a page of its lines and the next page’s cursor; `?format=csv` gives every line as CSV, then the totals (whose detail says so when the report is the day so far)',
        headers: {
          [SETTLEMENT_COMPLETE_HEADER]: header(
            'with `?format=csv`: `true` for the whole day, `false` for the day so far',
            {
              type: 'string',
              enum: ['true', 'false'],
            },
          ),
        },
        content: { 'application/json': named('Settlement', settlementSchema), 'text/csv': { jsonSchema: textSchema } },
      },
      '202': running(
        'the day’s run is under way (this request started it, or it was running): what it has checked of how many; ask again after Retry-After',
      ),
      '400': problemAnswer('not a date, or a bad format, limit or cursor', ['INVALID_DATE', 'VALIDATION_ERROR']),
      '404': problemAnswer('a HEAD, which starts nothing, of a day with no report and no run yet', ['NOT_FOUND']),
      '422': notStarted,
      '501': notConfigured,
      '503': runNotStarted,
    },
  }),
  startSettlementRun: defineRoute({
    method: 'post',
    path: '/ops/settlements/{date}/runs',
    operationId: 'startSettlementRun',
    tag: 'ledger',
    summary: 'Settle a day again: a fresh run; the report before it is served until it has finished',
    access: { opsScope: 'read' },
    params: dateParameter,
    responses: {
      '202': running('the fresh run, started'),
      '400': problemAnswer('not a date', ['INVALID_DATE']),
      '409': problemAnswer('a run of the day is under way: one at a time', ['SETTLEMENT_RUNNING'], {
        'Retry-After': retryAfterHeader,
      }),
      '422': notStarted,
      '501': notConfigured,
      '503': runNotStarted,
    },
  }),
};

/** The settlement's routes, as the document lists them. */
export const settlementRoutes: readonly AnyRouteSpec[] = Object.values(routes);

const invalidDate = (res: Response) =>
  sendProblem(res, {
    status: 400,
    code: 'INVALID_DATE',
    title: 'Bad Request',
    detail: 'the date must be a day, YYYY-MM-DD, between 1970-01-01 and 9998-12-31',
  });
const dayNotStarted = (res: Response, date: string, timeZone: string) =>
  sendProblem(res, {
    status: 422,
    code: 'SETTLEMENT_DAY_NOT_STARTED',
    title: 'Unprocessable Content',
    detail: `${date} has not begun in ${timeZone}: nothing to settle yet`,
  });

export function opsSettlementsRouter(deps: OpsSettlementsDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');

  const configured = (res: Response): SettlementService | null => {
    if (deps.settlements) return deps.settlements;
    sendProblem(res, {
      status: 501,
      code: 'NOT_CONFIGURED',
      title: 'Not Implemented',
      detail: 'settlement is not configured',
    });
    return null;
  };

  add(routes.getSettlement, async (req, res) => {
    const date = settlementDateSchema.safeParse(req.params.date);
    if (!date.success) return invalidDate(res);
    const query = settlementQuerySchema.safeParse(req.query);
    if (!query.success) return validationProblem(res, query.error);
    const settlements = configured(res);
    if (!settlements) return;
    const cursor = query.data.cursor === undefined ? null : decodeSettlementCursor(query.data.cursor);
    if (cursor) {
      // A later page: the run the first page came from, whatever ran since.
      const run = await settlements.finishedRun(date.data, cursor.runId);
      if (!run)
        return sendProblem(res, {
          status: 400,
          code: 'VALIDATION_ERROR',
          title: 'Bad Request',
          detail: 'cursor: not a page of this day’s report',
        });
      res.json(await settlements.page(run, cursor.after, query.data.limit ?? SETTLEMENT_PAGE_LIMIT));
      return;
    }
    // A HEAD (a monitor, a link checker) looks and starts nothing: it is answered from the day's report or run as
    // they are, and 404 when there is neither (a GET would start a run and call the wallet for each transfer).
    const answer =
      req.method === 'HEAD'
        ? await settlements.current(date.data)
        : await settlements.settle(date.data, { requestedBy: resolvedByOf(req, res), signal: clientGone(res) });
    switch (answer.kind) {
      case 'none':
        return sendProblem(res, {
          status: 404,
          code: 'NOT_FOUND',
          title: 'Not Found',
          detail: 'no report and no run of this day yet: a GET starts one',
        });
      case 'not-started':
        return dayNotStarted(res, date.data, settlements.timeZone);
      case 'running':
        res.setHeader('Retry-After', String(settlements.retryAfterSeconds(answer.run)));
        res.status(202).json(settlements.progress(answer.run));
        return;
      case 'report':
        if (query.data.format === 'csv') {
          await sendSettlementCsv(res, deps.csvStreams, settlements, answer.run);
          return;
        }
        res.json(await settlements.page(answer.run, null, query.data.limit ?? SETTLEMENT_PAGE_LIMIT));
        return;
    }
  });

  add(routes.startSettlementRun, async (req, res) => {
    const date = settlementDateSchema.safeParse(req.params.date);
    if (!date.success) return invalidDate(res);
    const settlements = configured(res);
    if (!settlements) return;
    const answer = await settlements.startFresh(date.data, resolvedByOf(req, res));
    switch (answer.kind) {
      case 'not-started':
        return dayNotStarted(res, date.data, settlements.timeZone);
      case 'running':
        res.setHeader('Retry-After', String(settlements.retryAfterSeconds(answer.run)));
        return sendProblem(res, {
          status: 409,
          code: 'SETTLEMENT_RUNNING',
          title: 'Conflict',
          detail: `a run of ${date.data} is under way (${answer.run.checked} of ${answer.run.total} checked): one at a time; GET /ops/settlements/${date.data} follows it`,
        });
      case 'started':
        res.setHeader('Retry-After', String(settlements.retryAfterSeconds(answer.run)));
        res.status(202).json(settlements.progress(answer.run));
        return;
    }
  });

  return router;
}
