// domain/money.ts: decimal strings in, exact JSON numbers at the boundary, and back.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  addAmounts,
  amountOf,
  amountSchema,
  compareAmounts,
  currencyRefusal,
  formatAmount,
  fromNumeric,
  fromWireNumber,
  moneyOf,
  MoneyUnreadable,
  normaliseAmount,
  parseAmount,
  parseSignedAmount,
  sameValue,
  storedAmount,
  subtractAmounts,
  toNumeric,
  toWireNumber,
} from '../../domain/money.ts';
import { toWireAmount } from '../../wallet/wire-amount.ts';

describe('amountSchema', () => {
  it.each(['0.01', '100.50', '100', '9999999999.99'])('accepts %s PHP', (value) => {
    expect(amountSchema.safeParse({ currency: 'PHP', value }).success).toBe(true);
  });
  it.each(['0', '0.00', '-1.00', '1e3', ' 1.00', '1.005', '10000000000.00', '01.00', '1.', '.5', 'NaN'])(
    'refuses %s PHP',
    (value) => {
      expect(amountSchema.safeParse({ currency: 'PHP', value }).success).toBe(false);
    },
  );
  it('refuses numbers, what is no currency code and extra fields; a code walletflow does not move is the service’s 422', () => {
    expect(amountSchema.safeParse({ currency: 'PHP', value: 100.5 }).success).toBe(false);
    for (const currency of ['php', 'PH', 'PHPX', '', 7])
      expect(amountSchema.safeParse({ currency, value: '1.00' }).success, String(currency)).toBe(false);
    expect(amountSchema.safeParse({ currency: 'PHP', value: '1.00', extra: 1 }).success).toBe(false);
    // ISO 4217-shaped: parsed, so that currencyRefusal answers it (422 CURRENCY_NOT_ACCEPTED), not a 400.
    expect(amountSchema.safeParse({ currency: 'XXX', value: '1.00' }).success).toBe(true);
    expect(amountSchema.safeParse({ currency: 'JPY', value: '1.5' }).success).toBe(true);
    expect(amountSchema.safeParse({ currency: 'PHP', value: '1.005' }).success).toBe(false);
    expect(currencyRefusal('XXX')).toContain('XXX');
    // Never sent to the wallet.
    expect(() => toWireAmount({ currency: 'XXX', value: '1.00' }, 'transfers.create')).toThrow(/currency/);
  });
});

describe('the wallet boundary', () => {
  it('writes the decimal text exactly as a JSON number', () => {
    expect(JSON.stringify({ value: toWireNumber('100.50') })).toBe('{"value":100.5}');
    expect(JSON.stringify({ value: toWireNumber('0.07') })).toBe('{"value":0.07}');
    expect(JSON.stringify({ value: toWireNumber('9999999999.99') })).toBe('{"value":9999999999.99}');
  });
  it('reads JSON numbers back to the currency notation', () => {
    expect(fromWireNumber(100.5, 'PHP')).toBe('100.50');
    expect(fromWireNumber(0.1 + 0.2 - 0.00000000000000004, 'PHP')).toBe('0.30');
    expect(fromWireNumber(0.001, 'PHP')).toBe('0.001');
    expect(() => fromWireNumber(-1, 'PHP')).toThrow();
  });
  it('adds and compares without binary floating point', () => {
    expect(addAmounts('0.10', '0.20', 'PHP')).toBe('0.30');
    expect(compareAmounts('100.5', '100.50')).toBe(0);
    expect(normaliseAmount({ currency: 'PHP', value: '7' })).toEqual({ currency: 'PHP', value: '7.00' });
  });
});

describe('one money type: thousandths inside, parsed once, written once', () => {
  it('parses unsigned and signed decimal strings into thousandths', () => {
    expect(parseAmount('100.50')).toBe(100_500n);
    expect(parseAmount('-1.00')).toBeNull();
    expect(parseSignedAmount('-25.00')).toBe(-25_000n);
    expect(parseSignedAmount('--1')).toBeNull();
    expect(moneyOf({ currency: 'PHP', value: '7' })).toEqual({ currency: 'PHP', thousandths: 7_000n });
  });
  it('writes thousandths in the currency notation, keeping a significant third decimal', () => {
    expect(amountOf(100_500n, 'PHP')).toEqual({ currency: 'PHP', value: '100.50' });
    expect(amountOf({ currency: 'JPY', thousandths: 5_000n })).toEqual({ currency: 'JPY', value: '5' });
    expect(formatAmount(1n, 'PHP')).toBe('0.001');
    expect(formatAmount(-25_000n, 'PHP')).toBe('-25.00');
  });
  it('reads and writes the database numeric exactly', () => {
    expect(toNumeric(-25_000n)).toBe('-25.000');
    expect(fromNumeric('12.340')).toBe(12_340n);
    expect(fromNumeric({ toFixed: () => '-0.5' })).toBe(-500n);
    expect(storedAmount({ amount: '10.000', currency: 'PHP' })).toEqual({ currency: 'PHP', value: '10.00' });
  });
  // The view and the payment activity read an unreadable stored amount as 0 before (a silent "?? 0n"
  // in two of the five copies): a corrupt row must never become a zero payment or a zero on a page.
  it('never reads an unreadable stored amount or currency as zero', () => {
    expect(() => fromNumeric('1.0005')).toThrow(MoneyUnreadable);
    expect(() => fromNumeric('NaN')).toThrow(MoneyUnreadable);
    expect(() => storedAmount({ amount: '1.00', currency: 'XXX' })).toThrow(MoneyUnreadable);
  });
  it('compares amount objects by value', () => {
    expect(sameValue({ value: '100.5' }, { value: '100.50' })).toBe(true);
    expect(sameValue({ value: 'x' }, { value: 'x' })).toBe(false);
    expect(subtractAmounts('1.00', '0.01', 'PHP')).toBe('0.99');
  });
  // Five copies of the Decimal-to-amount conversion had drifted apart: the arithmetic of thousandths
  // (×1000, three-digit fractions, toFixed(3)) lives in domain/money.ts alone.
  it('no other source file converts amounts by hand', () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const sources = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
      cwd: root,
      encoding: 'utf8',
    })
      .split('\n')
      .filter((file) => file && !file.startsWith('test/') && !file.startsWith('client/') && file !== 'domain/money.ts');
    const byHand =
      /\bpad(?:Start|End)\(3, '0'\)|\*\s*1000n\b|\btoFixed\(3\)|\b(?:toThousandths|fromThousandths|thousandthsOf|signedThousandths)\b/;
    const offenders = sources.filter(
      (file) => existsSync(path.join(root, file)) && byHand.test(readFileSync(path.join(root, file), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
});
