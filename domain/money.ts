// Money as decimal strings. Amounts stay strings ("100.50") everywhere inside walletflow and
// become JSON numbers only in the body sent to the wallet service (contract-decisions section 7).
import { z } from 'zod';

/** Minor units of the currencies walletflow accepts (ISO 4217). */
export const currencyMinorUnits = { PHP: 2, USD: 2, EUR: 2, JPY: 0 } as const;
export type Currency = keyof typeof currencyMinorUnits;
export const currencySchema = z.enum(Object.keys(currencyMinorUnits) as [Currency, ...Currency[]], {
  error: 'currency must be an ISO 4217 code walletflow supports (PHP, USD, EUR, JPY)',
});

/** The interface's bounds for amount.value and fee.value, in thousandths. */
const MIN_THOUSANDTHS = 1n; // 0.001
const MAX_THOUSANDTHS = 9_999_999_999_990n; // 9999999999.99

const decimalPattern = /^(0|[1-9]\d{0,9})(?:\.(\d{1,3}))?$/;

/** Parses a canonical decimal string into thousandths, or returns null. */
export function toThousandths(value: string): bigint | null {
  const match = decimalPattern.exec(value);
  if (!match) return null;
  const whole = BigInt(match[1] ?? '0');
  const fraction = BigInt((match[2] ?? '').padEnd(3, '0'));
  return whole * 1000n + fraction;
}

/**
 * Formats thousandths as a decimal string with at least `minDecimals` fraction digits; a
 * significant third decimal (a 0.001 fee) is kept rather than rounded away.
 */
export function fromThousandths(thousandths: bigint, minDecimals: number): string {
  const negative = thousandths < 0n;
  const abs = negative ? -thousandths : thousandths;
  const whole = abs / 1000n;
  let fraction = (abs % 1000n).toString().padStart(3, '0');
  while (fraction.length > minDecimals && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${negative ? '-' : ''}${whole}${fraction.length > 0 ? `.${fraction}` : ''}`;
}

export const amountSchema = z
  .object({
    currency: currencySchema,
    value: z.string({ error: 'amount.value must be a decimal string such as "100.50"' }).meta({
      // For the API documentation: the superRefine below is what checks it.
      description: 'a decimal string, 0.001 to 9999999999.99, with at most the currency\'s decimals (PHP 2): no sign, exponent or spaces',
      pattern: decimalPattern.source,
      examples: ['100.50'],
    }),
  })
  .strict()
  .superRefine((amount, ctx) => {
    const thousandths = toThousandths(amount.value);
    if (thousandths === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'amount.value must be a plain decimal string such as "100.50" (no sign, exponent or spaces)',
      });
      return;
    }
    if (thousandths < MIN_THOUSANDTHS || thousandths > MAX_THOUSANDTHS) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'amount.value must be between 0.001 and 9999999999.99' });
      return;
    }
    const decimals = currencyMinorUnits[amount.currency];
    const [, fraction = ''] = amount.value.split('.');
    if (fraction.length > decimals) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `amount.value has more decimals than ${amount.currency} allows (${decimals})`,
      });
    }
  });
export type Amount = z.infer<typeof amountSchema>;

/** Normalises an amount to the currency's minor unit ("100.5" PHP becomes "100.50"). */
export function normaliseAmount(amount: Amount): Amount {
  const thousandths = toThousandths(amount.value);
  if (thousandths === null) throw new RangeError('not a decimal amount');
  return { currency: amount.currency, value: fromThousandths(thousandths, currencyMinorUnits[amount.currency]) };
}

/**
 * The JSON number for the wallet service. Values within the interface's bounds have at most 13
 * significant digits, so the shortest double representation that JSON.stringify writes is the
 * same decimal text: no binary rounding reaches the wire. The round trip is checked anyway.
 */
export function toWireNumber(value: string): number {
  const thousandths = toThousandths(value);
  if (thousandths === null) throw new RangeError('not a decimal amount');
  const wire = Number(value);
  if (toThousandths(String(wire)) !== thousandths) throw new RangeError('amount does not survive the JSON boundary');
  return wire;
}

/** Reads a JSON number from the wallet service back into a decimal string of the currency. */
export function fromWireNumber(value: number, currency: Currency): string {
  if (!Number.isFinite(value) || value < 0) throw new RangeError('not a wallet amount');
  const text = Number.isInteger(value) ? String(value) : value.toFixed(3).replace(/0+$/, '');
  const thousandths = toThousandths(text.endsWith('.') ? text.slice(0, -1) : text);
  if (thousandths === null || Math.abs(Number(text) - value) > 1e-9 * Math.max(1, value)) {
    throw new RangeError('wallet amount has more than 3 decimals');
  }
  return fromThousandths(thousandths, currencyMinorUnits[currency]);
}

export function addAmounts(a: string, b: string, currency: Currency): string {
  const x = toThousandths(a);
  const y = toThousandths(b);
  if (x === null || y === null) throw new RangeError('not a decimal amount');
  return fromThousandths(x + y, currencyMinorUnits[currency]);
}

export function compareAmounts(a: string, b: string): number {
  const x = toThousandths(a);
  const y = toThousandths(b);
  if (x === null || y === null) throw new RangeError('not a decimal amount');
  return x < y ? -1 : x > y ? 1 : 0;
}
