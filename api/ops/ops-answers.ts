// What the ops API's routes share in the document: the answers every ops route may give (its
// authentication, ops-auth.ts, and the app's error handler), those of a route with a JSON body
// that the framework cannot read (express.json), the codes of a malformed body, the
// Idempotency-Key header and the list routes' filters; the 503 of a route whose workflow could not
// take its request (lib/workflow-unavailable.ts), declared and sent. api/docs/openapi.ts adds the
// shared answers to every ops route; the routes name the others where they use them.
import type { Response } from 'express';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { WORKFLOW_UNAVAILABLE, type WorkflowRefusal } from '../../lib/workflow-unavailable.ts';
import { sendProblem } from '../http/problem.ts';
import { header, problemAnswer, retryAfterHeader, type AnswerSpec, type ParameterSpec } from '../http/route-spec.ts';

/** What every ops route may answer besides its own outcomes. */
export const opsCommonAnswers: Record<`${number}`, AnswerSpec> = {
  '401': problemAnswer('no or a wrong ops API key', ['UNAUTHORIZED'], {
    'WWW-Authenticate': header('`Bearer realm="walletflow-ops"`'),
  }),
  '403': problemAnswer('the ops API key lacks the scope this route needs (OPS_API_KEYS `name:scopes:key`)', [
    'SCOPE_REQUIRED',
  ]),
  '429': problemAnswer('too many requests with a wrong key from this address', ['TOO_MANY_FAILED_ATTEMPTS'], {
    'Retry-After': retryAfterHeader,
  }),
  '500': problemAnswer('an unexpected failure (logged)', ['INTERNAL']),
  '503': problemAnswer(
    'too many requests at once (docs/running-at-scale.md): nothing was stored (or, when PostgreSQL refused a connection, as the detail says, what was stored before it is answered by the same request); send the same request, with the same Idempotency-Key, again after Retry-After. A cancel, resolve or batch move whose act committed before the refusal says so in its detail ("… was cancelled, but it could not be read back"): read the record after Retry-After instead of sending it again. A batch move asked for while another move of the batch is under way (a cancel of many items takes minutes) is refused so too, nothing changed',
    ['OVERLOADED'],
    { 'Retry-After': retryAfterHeader },
  ),
};

/**
 * The 503 of a route that calls a workflow (it replaces the common 503 in the document): the
 * common OVERLOADED, and WORKFLOW_UNAVAILABLE with what the route's own refusal leaves behind.
 */
export function workflowUnavailableAnswer(whatIsLeft: string): AnswerSpec {
  return problemAnswer(
    `OVERLOADED: too many requests at once, nothing was stored (a connection PostgreSQL refused: the detail says what is known, and an act that committed before it says it was done: read the record instead of sending it again); WORKFLOW_UNAVAILABLE: Temporal cannot take the request's workflow call now (unreachable or busy, or the workflow's task is failing, e.g. during a deploy; for a resolve, also a workflow not taking a resolution yet: not at its review, or another resolution under way): ${whatIsLeft}. Either way, send the same request (same Idempotency-Key where it has one) again after Retry-After`,
    ['OVERLOADED', WORKFLOW_UNAVAILABLE],
    { 'Retry-After': retryAfterHeader },
  );
}

/**
 * Sends 503 WORKFLOW_UNAVAILABLE with Retry-After; `detail`: what is true of this request (what it stored, what to send
 * again).
 */
export function sendWorkflowUnavailable(res: Response, refusal: WorkflowRefusal, detail: string): void {
  res.setHeader('Retry-After', String(refusal.retryAfterSeconds));
  sendProblem(res, { status: 503, code: WORKFLOW_UNAVAILABLE, title: 'Service Unavailable', detail });
}

/** What a route with a JSON body may answer when the framework cannot read the body (nothing stored). */
export const unreadableJsonBodyAnswers: Record<`${number}`, AnswerSpec> = {
  '413': problemAnswer('the body is larger than 16 KiB', ['BODY_TOO_LARGE']),
  '415': problemAnswer('a Content-Encoding or charset that is not supported (the body must be UTF-8 JSON)', [
    'UNSUPPORTED_CONTENT_ENCODING',
    'UNSUPPORTED_CHARSET',
  ]),
};

/** The codes of a 400 for a body the framework could not read as JSON. */
export const malformedBodyCodes = ['MALFORMED_JSON', 'MALFORMED_BODY', 'REQUEST_ABORTED', 'BODY_LENGTH_MISMATCH'];

/** The header of a route that starts something at most once. */
export const idempotencyKeyHeader: Record<string, ParameterSpec & { required: boolean }> = {
  'Idempotency-Key': {
    schema: idempotencyKeySchema,
    required: true,
    description:
      'Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`.',
  },
};

/** The list routes' query parameters (lib/list-page.ts). */
export const listFilterDescriptions: Record<string, string> = {
  status: 'only this status',
  from: 'created at or after (ISO-8601 with an offset)',
  to: 'created before (ISO-8601 with an offset)',
  limit: 'items per page (1 to 200, default 50)',
  cursor: 'the `nextCursor` of the previous page',
};

/** A 400 of a list route. */
export const badListQueryAnswer = problemAnswer('a bad filter, or a cursor this API did not give', [
  'VALIDATION_ERROR',
  'INVALID_CURSOR',
]);
