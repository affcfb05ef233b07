// The answer of a list route (GET /ops/fundings, GET /ops/payments): the page as
// `{ items, nextCursor }`, or 400 INVALID_CURSOR for a cursor this API never wrote.
import type { Response } from 'express';
import type { ListPage } from '../../lib/list-page.ts';
import { sendProblem } from '../http/problem.ts';

export function sendListPage<Item>(res: Response, page: ListPage<Item>): void {
  if (page.kind === 'invalid-cursor') {
    sendProblem(res, {
      status: 400,
      code: 'INVALID_CURSOR',
      title: 'Bad Request',
      detail: 'cursor is not one this API returned',
    });
    return;
  }
  const body: { items: Item[]; nextCursor: string | null } = { items: page.items, nextCursor: page.nextCursor };
  res.json(body);
}
