// RFC 9457 problem details with an added `code` member: the one error shape of walletflow's API.
import type { Response } from 'express';
import { z } from 'zod';

/** A problem document as sent (`application/problem+json`); `code` is the stable member to branch on. */
export const problemSchema = z.object({
  type: z.literal('about:blank'),
  status: z.number().int().min(400).max(599),
  code: z.string(),
  title: z.string(),
  detail: z.string().optional(),
  /** A validation failure's issues: where (a dotted path) and what, never the value sent. */
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
export type ProblemDocument = z.infer<typeof problemSchema>;
/** What a route says; the `type` member is always `about:blank`. */
export type Problem = Omit<ProblemDocument, 'type'>;

export function sendProblem(res: Response, problem: Problem): void {
  const document: ProblemDocument = { type: 'about:blank', ...problem };
  res.status(problem.status).type('application/problem+json').json(document);
}
