// Amounts at the sandbox's edges: PHP decimal strings in the admin API, JSON numbers in the
// transfer and payment bodies (contract-decisions section 7). Sandbox wallets hold PHP only.
import { z } from 'zod';
import {
  addAmounts,
  compareAmounts,
  currencyMinorUnits,
  formatAmount,
  fromWireNumber,
  MAX_THOUSANDTHS,
  MIN_THOUSANDTHS,
  parseAmount,
  subtractAmounts,
  thousandthsIn,
  toWireNumber,
} from '../domain/money.ts';
import { serviceError } from './answers.ts';

export const walletCurrency = 'PHP' as const;
const minorUnits = currencyMinorUnits[walletCurrency];

/** A non-negative PHP decimal string such as "1000.00", normalised to two decimals. */
export const phpDecimalSchema = z
  .string({ error: 'must be a decimal string such as "1000.00"' })
  .refine((value) => parseAmount(value) !== null, 'must be a plain decimal string such as "1000.00"')
  .refine((value) => (value.split('.')[1] ?? '').length <= minorUnits, `PHP has ${minorUnits} decimals`)
  .transform((value) => formatAmount(thousandthsIn(value), walletCurrency));

export interface WalletAmount {
  currency: typeof walletCurrency;
  value: string;
}

export const wireAmountSchema = z.object({
  currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 alpha-3 code'),
  value: z.number({ error: 'value must be a JSON number' }),
});

/** Checks a wire amount against the interface's bounds and the wallet currency. */
export function walletAmountFromWire(amount: z.infer<typeof wireAmountSchema>, field: string): WalletAmount {
  if (amount.currency !== walletCurrency) {
    throw serviceError(400, 'VALIDATION_ERROR', `${field}.currency: sandbox wallets hold ${walletCurrency} only`);
  }
  let value: string;
  try {
    value = fromWireNumber(amount.value, walletCurrency);
  } catch {
    throw serviceError(400, 'VALIDATION_ERROR', `${field}.value must be between 0.001 and 9999999999.99`);
  }
  const thousandths = thousandthsIn(value);
  if (thousandths < MIN_THOUSANDTHS || thousandths > MAX_THOUSANDTHS) {
    throw serviceError(400, 'VALIDATION_ERROR', `${field}.value must be between 0.001 and 9999999999.99`);
  }
  if (thousandths % 10n !== 0n) {
    throw serviceError(
      400,
      'VALIDATION_ERROR',
      `${field}.value has more decimals than ${walletCurrency} allows (${minorUnits})`,
    );
  }
  return { currency: walletCurrency, value };
}

export function toWire(amount: WalletAmount): { currency: string; value: number } {
  return { currency: amount.currency, value: toWireNumber(amount.value) };
}

export const addPhp = (a: string, b: string): string => addAmounts(a, b, walletCurrency);
export const subtractPhp = (a: string, b: string): string => subtractAmounts(a, b, walletCurrency);
/** -1, 0 or 1 as a < b, a = b, a > b. */
export const comparePhp = compareAmounts;
