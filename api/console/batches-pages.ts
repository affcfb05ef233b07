// The console's batches (contract-decisions sections 14 and 15; docs/console.md, "Batches"): the
// list (by state, a page at a time) with the upload form for those who may fund, one batch with
// its pushed progress, its buttons and its items, the moves (approve, reject, pause, resume,
// cancel) and the report. Every route declares its scope and is registered with that check first
// (consoleRoutesOn); every write acts through the batch service as the ops API's routes do, under the
// person's name, and answers by sending the person back to the batch with what happened, or with
// the refusal in words.
import { idSchema } from '../../domain/ids.ts';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { batchItemStatuses, batchReferenceSchema, batchStates, type BatchView } from '../../domain/funding-batch.ts';
import { batchReport } from '../../fundings/batch-report.ts';
import type { BatchService, MoveBatchResult } from '../../fundings/batch-service.ts';
import { defineRoute, htmlAnswer, redirectAnswer, textSchema, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  consoleHeaders,
  escapeHtml,
  idCell,
  money,
  notice,
  sendConsolePage,
  stateBadge,
  table,
  when,
  type SignedInPerson,
} from './console-layout.ts';
import {
  batchHasEnded,
  batchPath,
  doneNotices,
  isBatchState,
  renderBatchPage,
  renderProgress,
  type BatchMove,
  type DoneNotice,
  type ItemsPage,
} from './batch-page.ts';
import { BATCHES_PATH, handleUpload, renderUploadForm } from './batch-upload.ts';
import { doneAddress, doneOf } from './page-pieces.ts';

export type BatchesPagesDependencies = Pick<ConsoleServices, 'batches' | 'timeZone' | 'csvStreams' | 'liveStreams'>;

const batchIdParameter = { batchId: { schema: idSchema, description: 'the batch’s id' } };

const moveRoute = (move: BatchMove, summary: string, scope: 'approve' | 'fund') =>
  defineRoute({
    method: 'post',
    path: `/console/batches/{batchId}/${move}`,
    operationId: `console${move[0]!.toUpperCase()}${move.slice(1)}Batch`,
    tag: 'console',
    summary,
    access: { consoleScope: scope },
    params: batchIdParameter,
    responses: {
      '303': redirectAnswer('done: back to the batch, saying so'),
      '403': htmlAnswer('no scope, no valid CSRF token, or (approve) the person who uploaded the batch'),
      '404': htmlAnswer('no such batch'),
      '409': htmlAnswer('the batch’s state does not allow this move'),
    },
  });

const routes = {
  list: defineRoute({
    method: 'get',
    path: '/console/batches',
    operationId: 'consoleBatches',
    tag: 'console',
    summary: 'Batches, newest first, by state, a page at a time; the upload form for those who may fund',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page'), '400': htmlAnswer('a bad filter or a page link that is out of date') },
  }),
  upload: defineRoute({
    method: 'post',
    path: '/console/batches',
    operationId: 'consoleUploadBatch',
    tag: 'console',
    summary:
      'Upload a batch: a CSV file with a name and a source (multipart/form-data: the CSRF field before the file)',
    access: { consoleScope: 'fund' },
    responses: {
      '303': redirectAnswer('stored (or stored before by this form): to the batch'),
      '400': htmlAnswer('no file, or a form that cannot be read'),
      '403': htmlAnswer('no fund scope, or no valid CSRF token before the file'),
      '401': htmlAnswer(
        'the session ended (or a scope it was sent with was taken away) while the file arrived; nothing stored',
      ),
      '413': htmlAnswer('a file larger than 32 MB'),
      '422': htmlAnswer('the file’s problems row by row, or a refusal (money, limits, a reused form); nothing stored'),
    },
  }),
  batch: defineRoute({
    method: 'get',
    path: '/console/batches/{batchId}',
    operationId: 'consoleBatch',
    tag: 'console',
    summary:
      'A batch: what it is, its progress (pushed), the buttons the person may use, its items by status a page at a time',
    access: { consoleScope: 'read' },
    params: batchIdParameter,
    responses: { '200': htmlAnswer('the page'), '400': htmlAnswer('a bad filter'), '404': htmlAnswer('no such batch') },
  }),
  live: defineRoute({
    method: 'get',
    path: '/console/live/batches/{batchId}',
    operationId: 'consoleBatchLive',
    tag: 'console',
    summary: 'A batch’s progress, pushed every second until the batch has ended (Server-Sent Events)',
    access: { consoleScope: 'read' },
    params: batchIdParameter,
    responses: {
      '200': { description: 'an event stream', content: { 'text/event-stream': { jsonSchema: textSchema } } },
      '404': htmlAnswer('no such batch'),
    },
  }),
  report: defineRoute({
    method: 'get',
    path: '/console/batches/{batchId}/report',
    operationId: 'consoleBatchReport',
    tag: 'console',
    summary: 'A batch’s report as GET /ops/funding-batches/{id}/report writes it: one CSV line per item',
    access: { consoleScope: 'read' },
    params: batchIdParameter,
    responses: {
      '200': { description: 'the report', content: { 'text/csv': { jsonSchema: textSchema } } },
      '404': htmlAnswer('no such batch'),
    },
  }),
  approve: moveRoute(
    'approve',
    'Approve a batch awaiting approval (never the person who uploaded it): it runs',
    'approve',
  ),
  reject: moveRoute('reject', 'Reject a batch awaiting approval: no item starts, its hold is released', 'approve'),
  pause: moveRoute('pause', 'Pause a running batch: no new item starts', 'fund'),
  resume: moveRoute('resume', 'Resume a paused batch', 'fund'),
  cancel: moveRoute('cancel', 'Cancel a batch: items not yet started end CANCELLED; started items finish', 'fund'),
};

export const batchesRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** The routes whose form carries a file: the router's CSRF check lets them read it themselves (console-auth.ts). */
export const batchFormsWithFiles: readonly string[] = [routes.upload.path];

/** How often a batch's progress is pushed while its page is open. */
const PROGRESS_EVERY_MS = 1000;
const BATCHES_PER_PAGE = 50;
const ITEMS_PER_PAGE = 50;

const listQuerySchema = z.object({
  state: z.union([z.literal(''), z.enum(batchStates)]).optional(),
  cursor: idSchema.optional(),
});

const batchQuerySchema = z.object({
  status: z.union([z.literal(''), z.enum(batchItemStatuses)]).optional(),
  cursor: batchReferenceSchema.optional(),
  did: z.enum(Object.keys(doneNotices) as [DoneNotice, ...DoneNotice[]]).optional(),
});

const backToBatches = `<p><a href="${BATCHES_PATH}">Back to the batches</a></p>`;

function sendNoBatch(res: Response, person: SignedInPerson, batchId: unknown): void {
  sendConsolePage(res, 404, {
    title: 'No such batch',
    section: 'batches',
    person,
    body: `${notice(`There is no batch ${String(batchId).slice(0, 64)}.`, 'error')}${backToBatches}`,
  });
}

function renderList(
  page: { items: BatchView[]; nextCursor: string | null },
  state: BatchView['state'] | undefined,
  cursor: string | undefined,
  timeZone: string,
): string {
  const link = (next?: string) => {
    const params = new URLSearchParams();
    if (state) params.set('state', state);
    if (next) params.set('cursor', next);
    const text = params.toString();
    return `${BATCHES_PATH}${text ? `?${text}` : ''}`;
  };
  const options = [
    `<option value="">Every state</option>`,
    ...batchStates.map((each) => `<option value="${each}"${each === state ? ' selected' : ''}>${each}</option>`),
  ].join('');
  const rows = page.items.map((batch) => [
    `<a href="${batchPath(batch.batchId)}">${escapeHtml(batch.name)}</a>`,
    idCell(batch.batchId, `batch id of ${batch.name}`),
    stateBadge(batch.state),
    String(batch.total.count),
    money(batch.total.amount),
    escapeHtml(batch.createdBy),
    when(batch.createdAt, timeZone),
  ]);
  const pager = [
    cursor ? `<a href="${escapeHtml(link())}">First page</a>` : '',
    page.nextCursor ? `<a href="${escapeHtml(link(page.nextCursor))}">Next page</a>` : '',
  ].filter(Boolean);
  return `<form method="get" action="${BATCHES_PATH}" class="actions filter">
<div><label for="batch-state">State</label><select id="batch-state" name="state">${options}</select></div>
<button type="submit" class="secondary">Show</button>
</form>
${table(`Batches${state ? ` ${state}` : ''}, newest first`, ['Batch', 'Id', 'State', 'Items', 'Amount', 'Uploaded by', 'Uploaded'], rows, new Set([3, 4]))}
${pager.length > 0 ? `<nav class="pager" aria-label="Pages of batches">${pager.join('')}</nav>` : ''}`;
}

export function addBatchesRoutes(router: Router, deps: BatchesPagesDependencies): void {
  const add = consoleRoutesOn(router);
  const { batches, timeZone } = deps;

  add(routes.list, async (req, res) => {
    const person = personOf(res);
    const query = listQuerySchema.safeParse(req.query);
    const state = query.success && query.data.state ? query.data.state : undefined;
    const page = query.success
      ? await batches.list({
          limit: BATCHES_PER_PAGE,
          ...(state ? { state } : {}),
          ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
        })
      : null;
    const upload = person.scopes.has('fund')
      ? `<section class="card" aria-labelledby="h-upload"><h2 id="h-upload">Upload a batch</h2>${renderUploadForm(person)}</section>`
      : '';
    if (!page) {
      sendConsolePage(res, 400, {
        title: 'Batches',
        section: 'batches',
        person,
        body: `${notice('This page link is out of date or not one of ours (its state or its page). Start from the first page.', 'error')}<p><a href="${BATCHES_PATH}">The first page</a></p>${upload}`,
      });
      return;
    }
    sendConsolePage(res, 200, {
      title: 'Batches',
      section: 'batches',
      person,
      body: `${upload}<section class="card" aria-labelledby="h-list"><h2 id="h-list">Batches</h2>${renderList(page, state, query.data?.cursor, timeZone)}</section>`,
    });
  });

  add(routes.upload, (req, res) => handleUpload(req, res, batches));

  /** The batch page, with a notice (a move's refusal) and its status. */
  async function sendBatch(
    req: Request,
    res: Response,
    batchId: string,
    status: number,
    message?: string,
  ): Promise<void> {
    const person = personOf(res);
    const query = batchQuerySchema.safeParse(req.method === 'GET' ? req.query : {});
    if (!query.success) {
      sendConsolePage(res, 400, {
        title: 'Batch',
        section: 'batches',
        person,
        body: `${notice('This page link is not one of ours (its status filter or its page). Start from the batch’s first page.', 'error')}<p><a href="${batchPath(batchId)}">The batch</a></p>`,
      });
      return;
    }
    const itemStatus = query.data.status || undefined;
    const [batch, items] = await Promise.all([
      batches.view(batchId),
      batches.items(batchId, {
        limit: ITEMS_PER_PAGE,
        ...(itemStatus ? { status: itemStatus } : {}),
        ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
      }),
    ]);
    if (!batch || !items) {
      sendNoBatch(res, person, batchId);
      return;
    }
    const page: ItemsPage = { ...items, status: itemStatus, cursor: query.data.cursor };
    const said =
      message ??
      (query.data.did && doneOf(req, res, 'did') === query.data.did
        ? notice(
            query.data.did === 'created'
              ? `${doneNotices.created} ${batch.state === 'AWAITING_APPROVAL' ? 'It waits for another person’s approval.' : 'It runs now.'}`
              : doneNotices[query.data.did],
            'ok',
          )
        : undefined);
    sendConsolePage(res, status, {
      title: `Batch: ${batch.name}`,
      section: 'batches',
      person,
      // Maker-checker as the service decides it (a key and its owner are one, OPS_KEY_OWNERS).
      body: renderBatchPage(batch, person, page, timeZone, batches.isMaker(batch.createdBy, person.name), said),
    });
  }

  add(routes.batch, async (req, res) => {
    const id = idSchema.safeParse(req.params.batchId);
    if (!id.success) return sendNoBatch(res, personOf(res), req.params.batchId);
    await sendBatch(req, res, id.data, 200);
  });

  add(routes.live, async (req, res) => {
    const id = idSchema.safeParse(req.params.batchId);
    const first = id.success ? await batches.view(id.data) : null;
    if (!id.success || !first) return sendNoBatch(res, personOf(res), req.params.batchId);
    const shown = isBatchState(req.query.shown) ? req.query.shown : undefined;
    let next: BatchView | null = first;
    await deps.liveStreams.stream(
      req,
      res,
      async () => {
        const batch = next ?? (await batches.view(id.data));
        next = null;
        if (!batch) return { html: notice('This batch is gone.', 'error'), done: true };
        return { html: renderProgress(batch, shown, timeZone), done: batchHasEnded(batch) };
      },
      PROGRESS_EVERY_MS,
    );
  });

  add(routes.report, async (req, res) => {
    const id = idSchema.safeParse(req.params.batchId);
    if (!id.success || !(await batches.view(id.data))) return sendNoBatch(res, personOf(res), req.params.batchId);
    consoleHeaders(res);
    // The ops API's report, line for line (GET /ops/funding-batches/{id}/report), streamed the same way.
    await deps.csvStreams.send(res, batchReport(batches, id.data), {
      'Content-Disposition': `attachment; filename="batch-${id.data}.csv"`,
    });
  });

  const move =
    (verb: BatchMove, act: (service: BatchService, batchId: string, actor: string) => Promise<MoveBatchResult>) =>
    async (req: Request, res: Response) => {
      const person = personOf(res);
      const id = idSchema.safeParse(req.params.batchId);
      if (!id.success) return sendNoBatch(res, person, req.params.batchId);
      const result = await act(batches, id.data, person.name);
      switch (result.kind) {
        case 'moved':
          res.redirect(
            303,
            doneAddress(res, batchPath(id.data), { did: result.runnerNotStarted ? 'approve-waiting' : verb }),
          );
          return;
        case 'not-found':
          return sendNoBatch(res, person, id.data);
        case 'same-approver':
          return sendBatch(
            req,
            res,
            id.data,
            403,
            notice(
              'You uploaded this batch, so you cannot approve it: another person with the approve scope must (SAME_APPROVER). Nothing was done.',
              'error',
            ),
          );
        case 'wrong-state':
          return sendBatch(
            req,
            res,
            id.data,
            409,
            notice(
              `The batch is ${result.state}: it cannot be ${pastTense[verb]} from there (BATCH_STATE). Nothing was done.`,
              'error',
            ),
          );
      }
    };
  add(
    routes.approve,
    move('approve', (service, id, actor) => service.approve(id, actor)),
  );
  add(
    routes.reject,
    move('reject', (service, id, actor) => service.reject(id, actor)),
  );
  add(
    routes.pause,
    move('pause', (service, id, actor) => service.pause(id, actor)),
  );
  add(
    routes.resume,
    move('resume', (service, id, actor) => service.resume(id, actor)),
  );
  add(
    routes.cancel,
    move('cancel', (service, id, actor) => service.cancel(id, actor)),
  );
}

const pastTense: Record<BatchMove, string> = {
  approve: 'approved',
  reject: 'rejected',
  pause: 'paused',
  resume: 'resumed',
  cancel: 'cancelled',
};
