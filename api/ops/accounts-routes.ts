// The ledger's ops API (contract-decisions section 10): read an account (a partner user's, or a
// system account such as TREASURY), adjust one (Idempotency-Key; the other leg is the TREASURY,
// the treasury's own is CAPITAL), page through entries. The day's settlement has routes of its own
// (settlement-routes.ts). The rules live in ledger/.
import type { Router } from 'express';
import { z } from 'zod';
import {
  accountNameSchema,
  accountOfPathSegment,
  accountViewSchema,
  adjustmentViewSchema,
  createAdjustmentSchema,
  ledgerEntryViewSchema,
  partnerUserIdSchema,
  systemAccounts,
} from '../../domain/ledger.ts';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { CURRENCY_NOT_ACCEPTED } from '../../domain/money.ts';
import type { Database } from '../../lib/database.ts';
import { adjustmentScopes, isAdjustableAccount, type AdjustAccount } from '../../ledger/adjustments.ts';
import { isEntriesCursor, type Ledger } from '../../ledger/ledger.ts';
import { sendProblem } from '../http/problem.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, jsonAnswer, named, problemAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { resolvedByOf } from './ops-actor.ts';
import { opsKeyHasScope, opsKeyNameOf } from './ops-key.ts';
import { idempotencyKeyHeader, malformedBodyCodes } from './ops-answers.ts';

export interface OpsAccountsDependencies {
  database: Database;
  ledger: Ledger;
  /** An adjustment, as the console makes one too (ledger/adjustments.ts). */
  adjust: AdjustAccount;
}

/** /ops/accounts/{account}: a system account's name or a partner user id. */
export const accountPathSchema = z.union([z.enum(systemAccounts), partnerUserIdSchema]);

export const accountQuerySchema = z.object({ currency: z.enum(['PHP', 'USD', 'EUR', 'JPY']).default('PHP') }).strict();

export const entriesQuerySchema = z
  .object({
    account: accountNameSchema
      .optional()
      .meta({ description: 'an account name (`TREASURY`, `USER:{partnerUserId}`, …); absent: every account' }),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(64).refine(isEntriesCursor, 'cursor must be the nextCursor of a previous page').optional(),
  })
  .strict();

const adjustmentComponent = named('Adjustment', adjustmentViewSchema);
const accountParameter = {
  account: {
    schema: accountPathSchema,
    description:
      '`TREASURY` (or another system account: `IN_FLIGHT`, `WALLET_CLEARING`, `MERCHANT_REVENUE`, `CAPITAL`), else a partner user id',
  },
};

// Reading balances and entries is `read`; an adjustment moves a user's money, as
// unlinking changes a user's account: `accounts`.
const routes = {
  getAccount: defineRoute({
    method: 'get',
    path: '/ops/accounts/{account}',
    operationId: 'getAccount',
    tag: 'ledger',
    summary: 'An account of the partner’s ledger: balance (posted), held (pending fundings), available',
    access: { opsScope: 'read' },
    params: accountParameter,
    query: { schema: accountQuerySchema },
    responses: {
      '200': jsonAnswer(named('Account', accountViewSchema), 'the account (zeros for a user with no entries yet)'),
      '400': problemAnswer('not an account, or a query that is not one of the view’s', [
        'INVALID_ACCOUNT',
        'VALIDATION_ERROR',
      ]),
    },
  }),
  adjustAccount: defineRoute({
    method: 'post',
    path: '/ops/accounts/{account}/adjustments',
    operationId: 'adjustAccount',
    tag: 'ledger',
    summary:
      'Adjust a partner user’s account (the other leg is TREASURY) or the treasury (the other leg is CAPITAL; scope admin too)',
    access: { opsScope: 'accounts' },
    params: accountParameter,
    headers: idempotencyKeyHeader,
    body: {
      mediaType: 'application/json',
      schema: named('CreateAdjustment', createAdjustmentSchema),
      description: 'a signed amount: negative debits the account',
    },
    responses: {
      '200': jsonAnswer(adjustmentComponent, 'a repeated key with the same body: the same adjustment'),
      '201': jsonAnswer(adjustmentComponent, 'the adjustment, posted'),
      '400': problemAnswer('a missing or malformed key or body, or an account that cannot be adjusted', [
        'IDEMPOTENCY_KEY_INVALID',
        'INVALID_ACCOUNT',
        'VALIDATION_ERROR',
        ...malformedBodyCodes,
      ]),
      '422': problemAnswer(
        'the key was used with another body, a debit below available, or an amount not in PHP (nothing stored)',
        ['IDEMPOTENCY_KEY_REUSED', 'INSUFFICIENT_FUNDS', 'CURRENCY_NOT_ACCEPTED'],
      ),
    },
  }),
  listLedgerEntries: defineRoute({
    method: 'get',
    path: '/ops/ledger/entries',
    operationId: 'listLedgerEntries',
    tag: 'ledger',
    summary:
      'Ledger entries, newest first, a page at a time (pending: a hold or its reversal). Ids are drawn at write, not at commit: a reader that stops at the last id it saw can miss entries committed later (docs/ledger.md)',
    access: { opsScope: 'read' },
    query: { schema: entriesQuerySchema },
    responses: {
      '200': jsonAnswer(named('LedgerEntryPage', pageSchema(ledgerEntryViewSchema)), 'a page of entries'),
      '400': problemAnswer('a malformed query', ['VALIDATION_ERROR']),
    },
  }),
};

/** The ledger's routes, as the document lists them. */
export const accountsRoutes: readonly AnyRouteSpec[] = Object.values(routes);

export function opsAccountsRouter(deps: OpsAccountsDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');

  add(routes.getAccount, async (req, res) => {
    const segment = accountPathSchema.safeParse(req.params.account);
    if (!segment.success) {
      sendProblem(res, {
        status: 400,
        code: 'INVALID_ACCOUNT',
        title: 'Bad Request',
        detail: 'account must be TREASURY, another system account, or a partner user id',
      });
      return;
    }
    // The query's own refusal, naming it (before: INVALID_ACCOUNT, as if TREASURY were no account).
    const query = accountQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const { floor: _floor, ...view } = await deps.ledger.account(
      deps.database,
      accountOfPathSegment(segment.data),
      query.data.currency,
    );
    res.json(view);
  });

  add(routes.adjustAccount, async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, {
        status: 400,
        code: 'IDEMPOTENCY_KEY_INVALID',
        title: 'Bad Request',
        detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key',
      });
      return;
    }
    const segment = accountPathSchema.safeParse(req.params.account);
    const account = segment.success ? accountOfPathSegment(segment.data) : null;
    if (!account || !isAdjustableAccount(account)) {
      sendProblem(res, {
        status: 400,
        code: 'INVALID_ACCOUNT',
        title: 'Bad Request',
        detail: 'only a partner user’s account or TREASURY can be adjusted',
      });
      return;
    }
    const lacking = adjustmentScopes(account).filter((scope) => !opsKeyHasScope(res.locals, scope));
    if (lacking.length > 0) {
      sendProblem(res, {
        status: 403,
        code: 'SCOPE_REQUIRED',
        title: 'Forbidden',
        detail: `adjusting ${account} needs the ${lacking.join(' and ')} scope, which the ops API key ${opsKeyNameOf(res.locals)} lacks; nothing stored`,
      });
      return;
    }
    const parsed = createAdjustmentSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.adjust({
      idempotencyKey: key.data,
      account,
      body: parsed.data,
      actor: resolvedByOf(req, res),
    });
    switch (result.kind) {
      case 'created':
      case 'existing':
        res.status(result.kind === 'created' ? 201 : 200).json(result.adjustment);
        return;
      case 'invalid-account':
        sendProblem(res, {
          status: 400,
          code: 'INVALID_ACCOUNT',
          title: 'Bad Request',
          detail: 'only a partner user’s account or TREASURY can be adjusted',
        });
        return;
      case 'currency-refused':
        sendProblem(res, {
          status: 422,
          code: CURRENCY_NOT_ACCEPTED,
          title: 'Unprocessable Content',
          detail: result.detail,
        });
        return;
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different request body',
        });
        return;
      case 'insufficient-funds':
        sendProblem(res, {
          status: 422,
          code: 'INSUFFICIENT_FUNDS',
          title: 'Unprocessable Content',
          detail: result.detail,
        });
        return;
    }
  });

  add(routes.listLedgerEntries, async (req, res) => {
    const query = entriesQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    res.json(
      await deps.ledger.entries(deps.database, {
        limit: query.data.limit,
        ...(query.data.account ? { account: query.data.account } : {}),
        ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
      }),
    );
  });

  return router;
}
