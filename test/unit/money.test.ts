// domain/money.ts: decimal strings in, exact JSON numbers at the boundary, and back.
import { describe, expect, it } from 'vitest';
import { addAmounts, amountSchema, compareAmounts, fromWireNumber, normaliseAmount, toWireNumber } from '../../domain/money.ts';

describe('amountSchema', () => {
  it.each(['0.01', '100.50', '100', '9999999999.99'])('accepts %s PHP', (value) => {
    expect(amountSchema.safeParse({ currency: 'PHP', value }).success).toBe(true);
  });
  it.each(['0', '0.00', '-1.00', '1e3', ' 1.00', '1.005', '10000000000.00', '01.00', '1.', '.5', 'NaN'])('refuses %s PHP', (value) => {
    expect(amountSchema.safeParse({ currency: 'PHP', value }).success).toBe(false);
  });
  it('refuses numbers, unknown currencies and extra fields', () => {
    expect(amountSchema.safeParse({ currency: 'PHP', value: 100.5 }).success).toBe(false);
    expect(amountSchema.safeParse({ currency: 'XXX', value: '1.00' }).success).toBe(false);
    expect(amountSchema.safeParse({ currency: 'PHP', value: '1.00', extra: 1 }).success).toBe(false);
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
