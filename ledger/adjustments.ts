// An ops adjustment of an account (contract-decisions section 10), as the ops API
// (POST /ops/accounts/{account}/adjustments) and the console's accounts page both make it: the
// one currency accepted, the request's fingerprint (a repeated Idempotency-Key must come with the
// same account, amount and reason), the ledger's adjust, and what came of it. Each caller only
// turns the result into its own answer (a problem document, a page's notice).
import type { AdjustmentView, CreateAdjustmentRequest } from '../domain/ledger.ts';
import { currencyRefusal, moneyOf } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { requestFingerprint } from '../lib/idempotency.ts';
import { InsufficientFundsError, type Ledger } from './ledger.ts';

export type AdjustmentResult =
  | { kind: 'created' | 'existing'; adjustment: AdjustmentView }
  /** Only a partner user's account (`USER:…`) or TREASURY can be adjusted. */
  | { kind: 'invalid-account' }
  /** The amount is not in the accepted currency; `detail` says which is. */
  | { kind: 'currency-refused'; detail: string }
  /** The key was used with another account, amount or reason. */
  | { kind: 'key-reused' }
  /** A debit below what the account has available; `detail` says what it has. Nothing stored. */
  | { kind: 'insufficient-funds'; detail: string };

export interface AdjustmentRequest {
  idempotencyKey: string;
  /** The ledger's account name (`TREASURY`, `USER:{partnerUserId}`). */
  account: string;
  /** Validated (createAdjustmentSchema). */
  body: CreateAdjustmentRequest;
  /** Who adjusts: the ops key's name or the person's (recorded on the transaction). */
  actor: string;
}

/** Only a partner user's account or the treasury is adjusted by a person. */
export const isAdjustableAccount = (account: string): boolean => account === 'TREASURY' || account.startsWith('USER:');

/**
 * The scopes an adjustment of `account` needs: `accounts`, and for the treasury `admin` too. The treasury's other leg
 * is CAPITAL, which has no floor: its adjustment raises the float TREASURY_LIMIT bounds (contract section 10 names
 * only a partner user's adjustment, whose other leg is TREASURY).
 */
export const adjustmentScopes = (account: string): ReadonlyArray<'accounts' | 'admin'> =>
  account === 'TREASURY' ? ['accounts', 'admin'] : ['accounts'];

export type AdjustAccount = (request: AdjustmentRequest) => Promise<AdjustmentResult>;

export function createAdjustAccount(deps: {
  database: Database;
  ledger: Ledger;
  fingerprintKey: Buffer;
}): AdjustAccount {
  return async ({ idempotencyKey, account, body, actor }) => {
    if (!isAdjustableAccount(account)) return { kind: 'invalid-account' };
    const foreign = currencyRefusal(body.amount.currency);
    if (foreign) return { kind: 'currency-refused', detail: foreign };
    const amount = moneyOf(body.amount).thousandths;
    const fingerprint = requestFingerprint(deps.fingerprintKey, [
      'ADJUSTMENT',
      account,
      body.amount.currency,
      amount.toString(),
      body.reason,
    ]);
    try {
      return await deps.ledger.adjust(deps.database, {
        idempotencyKey,
        account,
        currency: body.amount.currency,
        amount,
        reason: body.reason,
        fingerprint,
        actor,
      });
    } catch (error) {
      if (!(error instanceof InsufficientFundsError)) throw error;
      const view = await deps.ledger.account(deps.database, error.account, error.currency);
      return {
        kind: 'insufficient-funds',
        detail: `${error.account} does not cover this debit; ${view.available.value} ${view.available.currency} available`,
      };
    }
  };
}
