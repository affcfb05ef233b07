// Uploading a batch in the console: the form (a name, whose money pays it, the CSV file, chosen or
// dropped), read as a stream and bounded (upload-form.ts, which checks the CSRF token before the
// file), then the batch service's create, exactly as POST /ops/funding-batches calls it: the
// person's name as its creator, `admin` letting a user's balance pay others' wallets, the form's
// own idempotency key (one per form drawn: the same form sent twice is the same batch). A file
// with problems comes back as its report, row by row; a refusal in words; a stored batch sends the
// person to its page.
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { MAX_LISTED_ROW_ERRORS, rowErrorAsShown, type BatchRowError } from '../../domain/funding-batch.ts';
import type { FundingRefusalCode, FundingSource } from '../../domain/ledger.ts';
import type { BatchRequest, BatchService, CreateBatchResult } from '../../fundings/batch-service.ts';
import { BATCH_BODY_LIMIT } from '../../fundings/batch-upload.ts';
import { escapeHtml } from '../../lib/html.ts';
import { overloadOf } from '../../lib/admission.ts';
import { mayGoOn, scopesNowOf } from '../http/actor.ts';
import { personActed, personOf } from './console-auth.ts';
import { CONSOLE_PATH, csrfField, notice, sendConsolePage, table, type SignedInPerson } from './console-layout.ts';
import { batchPath } from './batch-page.ts';
import { readUploadForm, type UploadedFile } from './upload-form.ts';
import { doneAddress } from './page-pieces.ts';

export const BATCHES_PATH = `${CONSOLE_PATH}/batches`;

/** What the form held, drawn again after a problem (the file must be chosen again: browsers allow no other way). */
export interface UploadValues {
  name: string;
  source: 'TREASURY' | 'USER_BALANCE';
  partnerUserId: string;
  /**
   * The form's idempotency key, drawn again where the same upload is to be sent again (refused for now, or cut off,
   * with nothing stored by this request): a first send still being stored is then found, not made twice. Absent: a
   * fresh key (the file must change first).
   */
  idempotencyKey?: string;
}

const emptyValues: UploadValues = { name: '', source: 'TREASURY', partnerUserId: '' };

/**
 * The upload form; a fresh idempotency key each time it is drawn, but where `values` carry the one to send again. The
 * CSRF field first, the file last (upload-form.ts).
 */
export function renderUploadForm(person: SignedInPerson, values: UploadValues = emptyValues): string {
  const option = (value: UploadValues['source'], label: string) =>
    `<option value="${value}"${values.source === value ? ' selected' : ''}>${label}</option>`;
  return `<form method="post" action="${BATCHES_PATH}" enctype="multipart/form-data" class="upload">
${csrfField(person)}
<input type="hidden" name="idempotencyKey" value="${escapeHtml(values.idempotencyKey ?? randomUUID())}">
<label for="batch-name">Name</label>
<input id="batch-name" name="name" type="text" required maxlength="200" value="${escapeHtml(values.name)}" aria-describedby="batch-name-hint">
<p class="muted" id="batch-name-hint">What the batch is, as people will see it: “May rewards”.</p>
<label for="batch-source">Paid from</label>
<select id="batch-source" name="source">${option('TREASURY', 'The treasury')}${option('USER_BALANCE', 'A partner user’s balance')}</select>
<label for="batch-user">Partner user id <span class="muted">(only when a partner user’s balance pays)</span></label>
<input id="batch-user" name="partnerUserId" type="text" maxlength="128" value="${escapeHtml(values.partnerUserId)}">
<div class="drop">
<label for="batch-file">CSV file</label>
<input id="batch-file" name="file" type="file" accept=".csv,text/csv" required aria-describedby="batch-file-hint">
<p class="muted" id="batch-file-hint">Or drop the file here. First line: <code>reference,recipient_type,recipient,amount</code>; amounts in PHP; at most 100,000 items.</p>
</div>
<div class="actions"><button type="submit">Check and submit</button></div>
</form>`;
}

/** The validation report: every listed problem by row (a cash-in code in it masked), and how many more there are. */
export function renderRowErrors(errors: readonly BatchRowError[], errorCount: number): string {
  const rows = errors.map(rowErrorAsShown).map((error) => [
    error.row === 0 ? '0 <span class="muted">(the form or the file)</span>' : String(error.row),
    `<span class="id">${escapeHtml(error.reference ?? '')}</span>`,
    // Names kept whole, the message readable: on a phone the table scrolls in its box rather than breaking words.
    `<code class="nowrap">${escapeHtml(error.field)}</code>`,
    `<code class="nowrap">${escapeHtml(error.code)}</code>`,
    `<span class="prose">${escapeHtml(error.message)}</span>`,
  ]);
  const more = errorCount - errors.length;
  return `${table('Problems in the file, by row', ['Row', 'Reference', 'Field', 'Code', 'Problem'], rows, new Set([0]))}${
    more > 0
      ? `<p><strong>and ${more} more</strong> <span class="muted">(the first ${MAX_LISTED_ROW_ERRORS} are listed: fix these and upload the file again to see the rest)</span></p>`
      : ''
  }`;
}

const refusalWords: Record<FundingRefusalCode, string> = {
  INSUFFICIENT_FUNDS: 'There is not enough money for this batch',
  AMOUNT_TOO_SMALL: 'An amount is below the smallest funding allowed',
  AMOUNT_TOO_LARGE: 'An amount is above the largest funding allowed',
  DAILY_LIMIT_EXCEEDED: 'A user’s daily limit would be passed',
  VELOCITY_LIMIT_EXCEEDED: 'Too many fundings in a short time',
  CURRENCY_NOT_ACCEPTED: 'Only PHP amounts are accepted',
};

/** The upload page again: what happened, the report if any, and the form (a new key). */
function sendUploadPage(
  res: Response,
  status: number,
  person: SignedInPerson,
  values: UploadValues,
  message: string,
  report = '',
): void {
  sendConsolePage(res, status, {
    title: report ? 'The file has problems' : 'Upload a batch',
    section: 'batches',
    person,
    body: `${message}${report ? `<section class="card" aria-labelledby="h-report"><h2 id="h-report">Problems in the file</h2>${report}</section>` : ''}
<section class="card" aria-labelledby="h-upload"><h2 id="h-upload">Upload the batch again</h2>${renderUploadForm(person, values)}</section>
<p><a href="${BATCHES_PATH}">Back to the batches</a></p>`,
  });
}

const uploadFieldsSchema = z.object({
  idempotencyKey: z.uuid(),
  name: z.string().default(''),
  source: z.enum(['TREASURY', 'USER_BALANCE']).default('TREASURY'),
  partnerUserId: z.string().trim().default(''),
});

function valuesOf(fields: ReadonlyMap<string, string>): UploadValues {
  const source = fields.get('source') === 'USER_BALANCE' ? 'USER_BALANCE' : 'TREASURY';
  return { name: fields.get('name') ?? '', source, partnerUserId: fields.get('partnerUserId') ?? '' };
}

/**
 * The file as the batch store reads it: a stream, checked as it arrives, never held whole (the
 * ops API's own reader, fundings/batch-upload.ts, with its byte limit and the upload budget). The
 * bytes are checked to be UTF-8 on the way: a file that is not stops the read (the store sees an
 * upload that ended early and stores nothing), and `notUtf8` says why. `drain` reads what the
 * store left unread (it stops at a refusal), so the form's parser reaches its end.
 */
function batchRequestOf(
  file: UploadedFile,
  name: string,
  source: FundingSource | undefined,
): { request: BatchRequest; notUtf8: () => boolean; drain: () => Promise<void> } {
  let notUtf8 = false;
  // Read by hand, never closed by a throw: closing the iterator would destroy the file's stream mid-form.
  const chunks = file.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  async function* utf8Checked(): AsyncGenerator<Uint8Array> {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (;;) {
      const next = await chunks.next();
      try {
        decoder.decode(next.done ? undefined : next.value, { stream: !next.done });
      } catch (error) {
        notUtf8 = true;
        throw error;
      }
      if (next.done) return;
      yield next.value;
    }
  }
  const drain = async () => {
    for (;;) if ((await chunks.next().catch(() => ({ done: true as const }))).done) return;
  };
  return {
    request: { kind: 'csv', body: utf8Checked(), name, ...(source ? { source } : {}) },
    notUtf8: () => notUtf8,
    drain,
  };
}

type Handled =
  | { kind: 'form'; status: number; message: string }
  | { kind: 'report'; errors: BatchRowError[]; errorCount: number }
  | { kind: 'created'; result: CreateBatchResult };

/** POST /console/batches: the form, read and acted on. */
export async function handleUpload(req: Request, res: Response, batches: BatchService): Promise<void> {
  const person = personOf(res);
  const outcome = await readUploadForm<Handled>(req, {
    csrfToken: person.csrfToken,
    fileField: 'file',
    // One byte past the store's own limit: the store sees the file is too large and says so.
    limits: { fileBytes: BATCH_BODY_LIMIT + 1, fields: 6, fieldBytes: 4096 },
    onFile: async (fields, file) => {
      // The form's token was checked before its file (upload-form.ts): the person acted.
      await personActed(res);
      const form = uploadFieldsSchema.safeParse(Object.fromEntries(fields));
      if (!form.success) {
        file.stream.resume();
        return {
          kind: 'form',
          status: 400,
          message:
            'This form is incomplete (it has no key of its own): reload the page and upload the file again. Nothing was stored.',
        };
      }
      const { idempotencyKey, name, source, partnerUserId } = form.data;
      // The treasury pays unless a user's balance is chosen; a user id given with the treasury is a slip, not a choice.
      if (source === 'TREASURY' && partnerUserId !== '') {
        file.stream.resume();
        const message =
          'a partner user id was given but the treasury was chosen: choose “A partner user’s balance”, or leave the id empty';
        return {
          kind: 'report',
          errors: [{ row: 0, reference: null, field: 'partnerUserId', code: 'INVALID', message }],
          errorCount: 1,
        };
      }
      const { request, notUtf8, drain } = batchRequestOf(
        file,
        name,
        source === 'USER_BALANCE' ? { type: 'USER_BALANCE', partnerUserId } : undefined,
      );
      // As the ops API: a user's balance pays that user's own wallets, unless the person may pay it to others (admin).
      // A store the admission refuses (its partner user's lane busy): the upload page again, with the same key, as for
      // a full upload budget, where the console's Busy page drew no form and Back drew one with a fresh key.
      // The session may end while the file arrives (signed out in another tab, a role taken away, its lifetime over):
      // asked again before the store, with what it was sent with (admin's too, when it lets a user's balance pay).
      const mayPayOthersBalance = person.scopes.has('admin');
      const adminMatters = mayPayOthersBalance && source === 'USER_BALANCE';
      const stillAllowed = async () =>
        (await mayGoOn(res.locals)) && (!adminMatters || ((await scopesNowOf(res.locals))?.has('admin') ?? false));
      const result = await batches
        .create(idempotencyKey, request, person.name, { mayPayOthersBalance, stillAllowed })
        .catch((error: unknown): CreateBatchResult => {
          const busy = overloadOf(error);
          if (!busy) throw error;
          return {
            kind: 'overloaded',
            retryAfterSeconds: busy.retryAfterSeconds,
            detail: busy.reason,
            ...(busy.connectionRefused ? { connectionRefused: true as const } : {}),
          };
        });
      await drain();
      if (result.kind === 'aborted' && notUtf8())
        return {
          kind: 'form',
          status: 400,
          message: 'The file is not UTF-8 text: save it as “CSV UTF-8” and upload it again. Nothing was stored.',
        };
      return { kind: 'created', result };
    },
  });
  switch (outcome.kind) {
    case 'csrf':
      sendConsolePage(res, 403, {
        title: 'Refused',
        body: notice(
          'This form was not sent from your console session (no valid CSRF token before the file): nothing was done. Reload the page and try again.',
          'error',
        ),
      });
      return;
    case 'malformed':
      sendConsolePage(res, 400, {
        title: 'Refused',
        person,
        section: 'batches',
        body: `${notice(`The upload could not be read (${outcome.message}): nothing was stored.`, 'error')}<p><a href="${BATCHES_PATH}">Back to the batches</a></p>`,
      });
      return;
    case 'no-file':
      sendUploadPage(
        res,
        400,
        person,
        valuesOf(outcome.fields),
        notice('Choose a CSV file (or drop it on the form): nothing was stored.', 'error'),
      );
      return;
    case 'read':
      break;
  }
  const values = valuesOf(outcome.fields);
  const handled = outcome.result;
  if (handled.kind === 'form') {
    sendUploadPage(res, handled.status, person, values, notice(handled.message, 'error'));
    return;
  }
  if (handled.kind === 'report') {
    sendUploadPage(
      res,
      422,
      person,
      values,
      problemsNotice(handled.errorCount),
      renderRowErrors(handled.errors, handled.errorCount),
    );
    return;
  }
  const result = handled.result;
  // Refused for now or cut off, nothing stored by this request: sent again, it is the same upload (the same key), so
  // a first send still being stored (a double click; an answer lost and the page reloaded) is found, not made twice.
  const submittedKey = z.uuid().safeParse(outcome.fields.get('idempotencyKey'));
  const sameUpload: UploadValues = submittedKey.success ? { ...values, idempotencyKey: submittedKey.data } : values;
  switch (result.kind) {
    case 'created':
      res.redirect(303, doneAddress(res, batchPath(result.batch.batchId), { did: 'created' }));
      return;
    case 'existing':
      res.redirect(303, doneAddress(res, batchPath(result.batch.batchId), { did: 'existing' }));
      return;
    case 'not-started':
      // Stored (and held): the batch's page says its run waits for the sweep, and not to upload it again.
      res.redirect(
        303,
        doneAddress(res, batchPath(result.batch.batchId), {
          did: result.storedBy === 'this-request' ? 'stored-waiting' : 'existing',
        }),
      );
      return;
    case 'invalid':
      sendUploadPage(
        res,
        422,
        person,
        values,
        problemsNotice(result.errorCount),
        renderRowErrors(result.errors, result.errorCount),
      );
      return;
    case 'key-reused':
      sendUploadPage(
        res,
        422,
        person,
        values,
        notice(
          'This form was already used to upload a different batch, so this one was refused: nothing was stored. The form below is a fresh one: choose the file again.',
          'error',
        ),
      );
      return;
    case 'refused':
      sendUploadPage(
        res,
        422,
        person,
        values,
        notice(
          `${refusalWords[result.code]}: ${result.detail} (${result.code}). Nothing was stored and nothing is held.`,
          'error',
        ),
      );
      return;
    case 'no-longer-allowed':
      sendConsolePage(res, 401, {
        title: 'Signed out',
        body: `${notice('Your session ended, or your role changed, while the file was sent: nothing was stored. Sign in again and upload it again.', 'error')}<p><a href="${CONSOLE_PATH}/sign-in">Sign in</a></p>`,
      });
      return;
    case 'too-large':
      sendUploadPage(
        res,
        413,
        person,
        values,
        notice(
          `The file is larger than ${result.maxBytes / 1024 / 1024} MB, more than a batch of 100,000 items can be: nothing was stored.`,
          'error',
        ),
      );
      return;
    case 'malformed':
    case 'aborted':
      sendUploadPage(
        res,
        400,
        person,
        sameUpload,
        notice('The upload stopped before the whole file arrived: nothing was stored. Try again.', 'error'),
      );
      return;
    case 'overloaded':
      // Other uploads hold the memory set aside for uploads now: the same form, sent again in a moment, is taken. A
      // connection the database refused may come after the batch was stored (its page's read): not known, so not said;
      // the same form, with its key, finds a batch already stored and stores nothing twice.
      res.setHeader('Retry-After', String(result.retryAfterSeconds));
      sendUploadPage(
        res,
        503,
        person,
        sameUpload,
        notice(
          result.connectionRefused
            ? `walletflow could not reach its database just now, so this batch may have been stored: look at the batches, or send this same form again in ${result.retryAfterSeconds} seconds (it stores nothing twice).`
            : `walletflow is storing other batches right now: nothing was stored. Upload the file again in ${result.retryAfterSeconds} seconds.`,
          'error',
        ),
      );
      return;
    default:
      result satisfies never;
  }
}

const problemsNotice = (count: number): string =>
  notice(
    `${count} problem${count === 1 ? '' : 's'} in the batch: nothing was stored. Row 1 is the first line after the header; row 0 is the form or the file as a whole. Fix the file and upload it again.`,
    'error',
  );
