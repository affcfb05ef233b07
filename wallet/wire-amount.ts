// Amounts at the wallet boundary: JSON numbers on the wire, decimal strings everywhere else
// (contract-decisions section 7). Conversion goes through domain/money.ts, never through floats.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Amount } from '../domain/money.ts';
import { amountSchema, currencySchema, fromWireNumber, toWireNumber } from '../domain/money.ts';
import { WalletError, transportCodes } from './errors.ts';
import type { WalletOperation } from './operations.ts';

/** `{ currency, value: number }` from the service, read into `{ currency, value: "100.50" }`. */
export const wireAmountSchema = z
  .object({ currency: currencySchema, value: z.number() })
  .transform((wire, ctx): Amount => {
    try {
      return { currency: wire.currency, value: fromWireNumber(wire.value, wire.currency) };
    } catch {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'not an amount of this currency' });
      return z.NEVER;
    }
  });

/**
 * The body form of an amount the caller gave. An invalid amount is refused before any request
 * (outcome rejected; the Request-Reference-No was never sent).
 */
export function toWireAmount(amount: Amount, operation: WalletOperation): { currency: string; value: number } {
  // A request's amount may name any ISO 4217 code (refused 422 by its service); the wallet gets only one it knows.
  const parsed = amountSchema.and(z.object({ currency: currencySchema })).safeParse(amount);
  if (!parsed.success) {
    throw new WalletError(
      {
        operation,
        httpStatus: null,
        code: transportCodes.invalidArgument,
        outcome: 'rejected',
        requestReferenceNo: randomUUID(),
      },
      parsed.error.issues[0]?.message ?? 'invalid amount',
    );
  }
  return { currency: parsed.data.currency, value: toWireNumber(parsed.data.value) };
}
