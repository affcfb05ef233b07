// RFC 9457 problem details with an added `code` member: the one error shape of walletflow's API.
import type { Response } from 'express';

export interface Problem {
  status: number;
  code: string;
  title: string;
  detail?: string;
  errors?: Array<{ path: string; message: string }>;
}

export function sendProblem(res: Response, problem: Problem): void {
  res
    .status(problem.status)
    .type('application/problem+json')
    .json({ type: 'about:blank', ...problem });
}
