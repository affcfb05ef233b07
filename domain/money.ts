// Money: the one module that reads, writes and converts amounts (docs/architecture.md, "Money").
// Inside walletflow an amount is an integer of thousandths (bigint) with its currency: parsed once
// at an edge, stored as PostgreSQL numeric(_, 3), and written back as a decimal string ("100.50")
// in the API's JSON or as a JSON number in a wallet request body (contract-decisions section 7).
// No amount ever passes through binary floating point.
import { z } from 'zod';

/** Minor units of the currencies walletflow accepts (ISO 4217). */
export const currencyMinorUnits = { PHP: 2, USD: 2, EUR: 2, JPY: 0 } as const;
export type Currency = keyof typeof currencyMinorUnits;
export const currencySchema = z.enum(Object.keys(currencyMinorUnits) as [Currency, ...Currency[]], {
  error: 'currency must be an ISO 4217 code walletflow supports (PHP, USD, EUR, JPY)',
});

/**
 * The one currency walletflow moves money in: the wallet service's (contract-decisions section 14,
 * "amounts in another currency than the configured one (PHP) are refused 422 at every money
 * route"). Other supported currencies still parse (a stored row, a wallet answer), so that the
 * refusal is a 422 naming the currency, never a 400 for a shape.
 */
export const acceptedCurrency: Currency = 'PHP';

/** The 422 code of a money request in another currency than acceptedCurrency. */
export const CURRENCY_NOT_ACCEPTED = 'CURRENCY_NOT_ACCEPTED';

/** Why an amount is refused for its currency, or null when it is acceptedCurrency. */
export function currencyRefusal(currency: string): string | null {
  return currency === acceptedCurrency
    ? null
    : `walletflow moves ${acceptedCurrency} only: an amount in ${currency} is not accepted`;
}

/** Records in one state, counted and summed (the console's totals of a day). */
export interface StatusTotal<Status extends string> {
  status: Status;
  count: number;
  /** Thousandths, in `currency`. */
  amount: bigint;
  currency: string;
}

/** An amount inside walletflow: thousandths of the currency's unit (PHP 100.50 is 100500n). */
export interface Money {
  readonly currency: Currency;
  readonly thousandths: bigint;
}

/** A stored amount that cannot be read (a corrupt row): never guessed as zero. */
export class MoneyUnreadable extends RangeError {
  constructor(detail: string) {
    super(`unreadable amount: ${detail}`);
    this.name = 'MoneyUnreadable';
  }
}

/** The interface's bounds for amount.value and fee.value, in thousandths. */
export const MIN_THOUSANDTHS = 1n; // 0.001
export const MAX_THOUSANDTHS = 9_999_999_999_990n; // 9999999999.99

const decimalPattern = /^(0|[1-9]\d{0,9})(?:\.(\d{1,3}))?$/;

/** Parses a canonical unsigned decimal string ("100.50") into thousandths, or returns null. */
export function parseAmount(value: string): bigint | null {
  const match = decimalPattern.exec(value);
  if (!match) return null;
  const whole = BigInt(match[1] ?? '0');
  const fraction = BigInt((match[2] ?? '').padEnd(3, '0'));
  return whole * 1000n + fraction;
}

/** Parses a signed decimal string ("-25.00" debits, "25.00" credits) into thousandths, or null. */
export function parseSignedAmount(value: string): bigint | null {
  const negative = value.startsWith('-');
  const magnitude = parseAmount(negative ? value.slice(1) : value);
  return magnitude === null ? null : negative ? -magnitude : magnitude;
}

/** The currency of a stored or foreign amount; an unknown one is unreadable. */
export function currencyOf(code: string): Currency {
  const parsed = currencySchema.safeParse(code);
  if (!parsed.success) throw new MoneyUnreadable(`currency ${code}`);
  return parsed.data;
}

/**
 * Formats thousandths as a decimal string with at least `minDecimals` fraction digits; a
 * significant third decimal (a 0.001 fee) is kept rather than rounded away.
 */
function decimalText(thousandths: bigint, minDecimals: number): string {
  const negative = thousandths < 0n;
  const abs = negative ? -thousandths : thousandths;
  const whole = abs / 1000n;
  let fraction = (abs % 1000n).toString().padStart(3, '0');
  while (fraction.length > minDecimals && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${negative ? '-' : ''}${whole}${fraction.length > 0 ? `.${fraction}` : ''}`;
}

/** Signed thousandths as the currency writes them: PHP 100500n is "100.50". */
export function formatAmount(thousandths: bigint, currency: string): string {
  return decimalText(thousandths, currencyMinorUnits[currencyOf(currency)]);
}

/** The JSON amount object of an amount: `{ currency, value: "100.50" }`. */
export function amountOf(money: Money): Amount;
export function amountOf(thousandths: bigint, currency: string): Amount;
export function amountOf(money: Money | bigint, currency?: string): Amount {
  const value: Money = typeof money === 'bigint' ? { currency: currencyOf(currency ?? ''), thousandths: money } : money;
  return { currency: value.currency, value: formatAmount(value.thousandths, value.currency) };
}

/** The amount of a validated amount object (amountSchema, signedAmountSchema). */
export function moneyOf(amount: { currency: string; value: string }): Money {
  const thousandths = parseSignedAmount(amount.value);
  if (thousandths === null) throw new RangeError('not a decimal amount');
  return { currency: currencyOf(amount.currency), thousandths };
}

/** The JSON amount object of a stored row's amount and currency columns. */
export function storedAmount(row: { amount: { toFixed(digits?: number): string } | string; currency: string }): Amount {
  return amountOf(moneyFromNumeric(row.amount, row.currency));
}

/** The SQL numeric text of signed thousandths ("-25.000"), for a parameter cast to numeric. */
export function toNumeric(thousandths: bigint): string {
  const negative = thousandths < 0n;
  const abs = negative ? -thousandths : thousandths;
  return `${negative ? '-' : ''}${abs / 1000n}.${(abs % 1000n).toString().padStart(3, '0')}`;
}

/**
 * Signed thousandths of a stored numeric: a Prisma Decimal (its exact decimal text) or the text a
 * raw query returns. More than three decimals, or anything that is not a number, is unreadable.
 */
export function fromNumeric(value: { toFixed(digits?: number): string } | string): bigint {
  const text = typeof value === 'string' ? value : value.toFixed();
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  const fraction = (match?.[3] ?? '').replace(/0+$/, '');
  if (!match || fraction.length > 3) throw new MoneyUnreadable(text);
  const abs = BigInt(match[2] ?? '0') * 1000n + BigInt(fraction.padEnd(3, '0'));
  return match[1] === '-' ? -abs : abs;
}

/** A stored amount and its stored currency. */
export function moneyFromNumeric(value: { toFixed(digits?: number): string } | string, currency: string): Money {
  return { currency: currencyOf(currency), thousandths: fromNumeric(value) };
}

/**
 * The currency a request names: any ISO 4217-shaped code. One walletflow does not move is refused
 * by the service with 422 CURRENCY_NOT_ACCEPTED (currencyRefusal), never 400 for its shape
 * (contract-decisions section 14: "refused 422 at every money route").
 */
export const requestedCurrencySchema = z
  .string({ error: 'currency must be an ISO 4217 code such as PHP' })
  .regex(/^[A-Z]{3}$/, { error: 'currency must be an ISO 4217 code such as PHP' })
  .meta({ description: `an ISO 4217 code; walletflow moves ${acceptedCurrency} only (another is refused 422)` });

export const amountSchema = z
  .object({
    currency: requestedCurrencySchema,
    value: z.string({ error: 'amount.value must be a decimal string such as "100.50"' }).meta({
      // For the API documentation: the superRefine below is what checks it.
      description:
        "a decimal string, 0.001 to 9999999999.99, with at most the currency's decimals (PHP 2): no sign, exponent or spaces",
      pattern: decimalPattern.source,
      examples: ['100.50'],
    }),
  })
  .strict()
  .superRefine((amount, ctx) => {
    const thousandths = parseAmount(amount.value);
    if (thousandths === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'amount.value must be a plain decimal string such as "100.50" (no sign, exponent or spaces)',
      });
      return;
    }
    if (thousandths < MIN_THOUSANDTHS || thousandths > MAX_THOUSANDTHS) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'amount.value must be between 0.001 and 9999999999.99',
      });
      return;
    }
    // Another currency than acceptedCurrency is refused for itself (currencyRefusal: 422), whatever its decimals.
    if (amount.currency !== acceptedCurrency) return;
    const decimals = currencyMinorUnits[acceptedCurrency];
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
  return amountOf(moneyOf(amount));
}

/**
 * The JSON number for the wallet service. Values within the interface's bounds have at most 13
 * significant digits, so the shortest double representation that JSON.stringify writes is the
 * same decimal text: no binary rounding reaches the wire. The round trip is checked anyway.
 */
export function toWireNumber(value: string): number {
  const thousandths = parseAmount(value);
  if (thousandths === null) throw new RangeError('not a decimal amount');
  const wire = Number(value);
  if (parseAmount(String(wire)) !== thousandths) throw new RangeError('amount does not survive the JSON boundary');
  return wire;
}

/** Reads a JSON number from the wallet service back into a decimal string of the currency. */
export function fromWireNumber(value: number, currency: Currency): string {
  if (!Number.isFinite(value) || value < 0) throw new RangeError('not a wallet amount');
  const text = Number.isInteger(value) ? String(value) : value.toFixed(3).replace(/0+$/, '');
  const thousandths = parseAmount(text.endsWith('.') ? text.slice(0, -1) : text);
  if (thousandths === null || Math.abs(Number(text) - value) > 1e-9 * Math.max(1, value)) {
    throw new RangeError('wallet amount has more than 3 decimals');
  }
  return formatAmount(thousandths, currency);
}

/** The sum of two decimal strings of one currency, in its notation. */
export function addAmounts(a: string, b: string, currency: Currency): string {
  return formatAmount(thousandthsIn(a) + thousandthsIn(b), currency);
}

/** a − b of two decimal strings of one currency, in its notation. */
export function subtractAmounts(a: string, b: string, currency: Currency): string {
  return formatAmount(thousandthsIn(a) - thousandthsIn(b), currency);
}

/** True when two amount objects' values are the same number ("100.5" and "100.50"); the currency is compared apart. */
export function sameValue(a: { value: string }, b: { value: string }): boolean {
  const x = parseAmount(a.value);
  return x !== null && x === parseAmount(b.value);
}

/** -1, 0 or 1 as a < b, a = b, a > b. */
export function compareAmounts(a: string, b: string): number {
  const x = thousandthsIn(a);
  const y = thousandthsIn(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Thousandths of a decimal string already known to be one (signed): a bad one is a bug, thrown. */
export function thousandthsIn(value: string): bigint {
  const thousandths = parseSignedAmount(value);
  if (thousandths === null) throw new RangeError(`not a decimal amount: ${value}`);
  return thousandths;
}
