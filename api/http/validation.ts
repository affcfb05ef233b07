// A zod failure as a 400 problem with one entry per issue (path and message), never echoing input.
import type { Response } from 'express';
import type { z } from 'zod';
import { sendProblem } from './problem.ts';

export function validationProblem(res: Response, error: z.ZodError): void {
  const errors = error.issues.map((issue) => ({ path: issue.path.join('.') || '(body)', message: issue.message }));
  sendProblem(res, {
    status: 400,
    code: 'VALIDATION_ERROR',
    title: 'Bad Request',
    detail: errors.map((entry) => `${entry.path}: ${entry.message}`).join('; '),
    errors,
  });
}
