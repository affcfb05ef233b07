// The ledger's ops API (contract-decisions section 10): read an account (a partner user's, or a
// system account such as TREASURY), adjust one (Idempotency-Key; the other leg is the TREASURY,
// the treasury's own is CAPITAL), page through entries, and settle a day against the wallet.
// The rules live in ledger/.
import { Router } from 'express';
import { z } from 'zod';
import {
  accountNameSchema,
  accountOfPathSegment,
  createAdjustmentSchema,
  partnerUserIdSchema,
  settlementDateSchema,
  signedThousandths,
  systemAccounts,
} from '../../domain/ledger.ts';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import type { Database } from '../../lib/database.ts';
import { requestFingerprint } from '../../lib/idempotency.ts';
import { InsufficientFundsError, isEntriesCursor, type Ledger } from '../../ledger/ledger.ts';
import { settlementCsv, type SettleDay } from '../../ledger/settlement.ts';
import { sendProblem } from '../http/problem.ts';
import { validationProblem } from '../http/validation.ts';
import { resolvedByOf } from './ops-actor.ts';

export interface OpsAccountsDependencies {
  database: Database;
  ledger: Ledger;
  fingerprintKey: Buffer;
  /** GET /ops/settlements/{date}; absent: 501. */
  settle?: SettleDay;
}

/** /ops/accounts/{account}: a system account's name or a partner user id. */
export const accountPathSchema = z.union([z.enum(systemAccounts), partnerUserIdSchema]);

export const accountQuerySchema = z.object({ currency: z.enum(['PHP', 'USD', 'EUR', 'JPY']).default('PHP') }).strict();

export const entriesQuerySchema = z
  .object({
    account: accountNameSchema.optional().meta({ description: 'an account name (`TREASURY`, `USER:{partnerUserId}`, …); absent: every account' }),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(64).refine(isEntriesCursor, 'cursor must be the nextCursor of a previous page').optional(),
  })
  .strict();

export const settlementQuerySchema = z.object({ format: z.enum(['json', 'csv']).default('json') }).strict();

export function opsAccountsRouter(deps: OpsAccountsDependencies): Router {
  const router = Router();

  router.get('/accounts/:account', async (req, res) => {
    const segment = accountPathSchema.safeParse(req.params.account);
    const query = accountQuerySchema.safeParse(req.query);
    if (!segment.success || !query.success) {
      sendProblem(res, { status: 400, code: 'INVALID_ACCOUNT', title: 'Bad Request', detail: 'account must be TREASURY, another system account, or a partner user id' });
      return;
    }
    const { floor: _floor, ...view } = await deps.ledger.account(deps.database, accountOfPathSegment(segment.data), query.data.currency);
    res.json(view);
  });

  router.post('/accounts/:account/adjustments', async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const segment = accountPathSchema.safeParse(req.params.account);
    const account = segment.success ? accountOfPathSegment(segment.data) : null;
    if (!account || !(account === 'TREASURY' || account.startsWith('USER:'))) {
      sendProblem(res, { status: 400, code: 'INVALID_ACCOUNT', title: 'Bad Request', detail: 'only a partner user’s account or TREASURY can be adjusted' });
      return;
    }
    const parsed = createAdjustmentSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const amount = signedThousandths(parsed.data.amount.value)!;
    const fingerprint = requestFingerprint(deps.fingerprintKey, ['ADJUSTMENT', account, parsed.data.amount.currency, amount.toString(), parsed.data.reason]);
    try {
      const result = await deps.ledger.adjust(deps.database, {
        idempotencyKey: key.data,
        account,
        currency: parsed.data.amount.currency,
        amount,
        reason: parsed.data.reason,
        fingerprint,
        actor: resolvedByOf(req, res),
      });
      if (result.kind === 'key-reused') {
        sendProblem(res, { status: 422, code: 'IDEMPOTENCY_KEY_REUSED', title: 'Unprocessable Content', detail: 'this Idempotency-Key was used with a different request body' });
        return;
      }
      res.status(result.kind === 'created' ? 201 : 200).json(result.adjustment);
    } catch (error) {
      if (!(error instanceof InsufficientFundsError)) throw error;
      const view = await deps.ledger.account(deps.database, error.account, error.currency);
      sendProblem(res, {
        status: 422,
        code: 'INSUFFICIENT_FUNDS',
        title: 'Unprocessable Content',
        detail: `${error.account} does not cover this debit; ${view.available.value} ${view.available.currency} available`,
      });
    }
  });

  router.get('/ledger/entries', async (req, res) => {
    const query = entriesQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    res.json(await deps.ledger.entries(deps.database, { limit: query.data.limit, ...(query.data.account ? { account: query.data.account } : {}), ...(query.data.cursor ? { cursor: query.data.cursor } : {}) }));
  });

  router.get('/settlements/:date', async (req, res) => {
    const date = settlementDateSchema.safeParse(req.params.date);
    const query = settlementQuerySchema.safeParse(req.query);
    if (!date.success || !query.success) {
      sendProblem(res, { status: 400, code: 'INVALID_DATE', title: 'Bad Request', detail: 'the date must be YYYY-MM-DD (and format json or csv)' });
      return;
    }
    if (!deps.settle) {
      sendProblem(res, { status: 501, code: 'NOT_CONFIGURED', title: 'Not Implemented', detail: 'settlement is not configured' });
      return;
    }
    const settlement = await deps.settle(date.data);
    if (query.data.format === 'csv') {
      res.type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="settlement-${date.data}.csv"`);
      res.send(settlementCsv(settlement));
      return;
    }
    res.json(settlement);
  });

  return router;
}
