// How sandbox handlers answer: they return (or throw, to stop early) a status and JSON body, so
// the fault layer can apply a handler's effect and still decide what the caller gets.
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';

export interface EndpointAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
export type EndpointHandler = (req: Request) => Promise<EndpointAnswer> | EndpointAnswer;

/** Thrown by a handler to answer early (a refusal); nothing has changed when it is thrown. */
export class Rejection extends Error {
  constructor(readonly answer: EndpointAnswer) {
    super(`rejected with ${answer.status}`);
  }
}

/** `{ code, message }`: the op and transfer services' error body (contract-decisions section 2). */
export function serviceError(status: number, code: string, message: string): Rejection {
  return new Rejection({ status, body: { code, message } });
}

/** RFC 6749 section 5.2 error body of the token endpoint. */
export function oauthError(status: number, error: string, description: string): Rejection {
  const headers: Record<string, string> = status === 401 ? { 'WWW-Authenticate': 'Basic realm="connect"' } : {};
  return new Rejection({ status, body: { error, error_description: description }, headers });
}

export async function runHandler(handler: EndpointHandler, req: Request): Promise<EndpointAnswer> {
  try {
    return await handler(req);
  } catch (error) {
    if (error instanceof Rejection) return error.answer;
    throw error;
  }
}

export function sendAnswer(res: Response, answer: EndpointAnswer): void {
  res.status(answer.status);
  if (answer.headers) res.set(answer.headers);
  if (answer.body === undefined) res.end();
  else res.json(answer.body);
}

/** An Express handler for endpoints without fault injection (the admin API). */
export function answerWith(handler: EndpointHandler): RequestHandler {
  return async (req, res, next) => {
    try {
      sendAnswer(res, await runHandler(handler, req));
    } catch (error) {
      next(error);
    }
  };
}

/** Parses with zod or rejects 400 VALIDATION_ERROR naming the first problem. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw serviceError(400, 'VALIDATION_ERROR', `${where}${issue?.message ?? 'invalid body'}`);
}
