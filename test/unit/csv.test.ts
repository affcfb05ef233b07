// lib/csv.ts: the CSV fields of walletflow's reports (a day's settlement, a batch's items) are
// quoted, and a value a spreadsheet would run as a formula is written as text (OWASP's CSV
// injection guidance: a leading =, +, -, @, tab or carriage return), while plain numbers, negative
// amounts among them, stay numbers.
import { describe, expect, it } from 'vitest';
import { csvField, csvLine } from '../../lib/csv.ts';

describe('a report’s CSV fields', () => {
  it('are quoted, with quotes doubled', () => {
    expect(csvField('May "rewards", 1')).toBe('"May ""rewards"", 1"');
    expect(csvField(null)).toBe('""');
    expect(csvField(12)).toBe('"12"');
    expect(csvLine(['a', null, 3])).toBe('"a","","3"\r\n');
  });

  it('write a value that starts a formula as text: =, +, @, and - not followed by a plain number', () => {
    for (const formula of [
      '=1+1',
      '+1',
      '@SUM(A1)',
      '-A1',
      '=HYPERLINK("http://x")',
      '-1+1',
      "-2+3+cmd|' /C calc'!A0",
      '-1,5',
      '-1 ',
      '-1)',
      '--1',
    ]) {
      expect(csvField(formula), formula).toBe(`"'${formula.replace(/"/g, '""')}"`);
    }
  });

  it('write a value that starts with a tab or a carriage return as text', () => {
    for (const value of ['\t=1+1', '\tplain', '\r=1+1', '\r\n-1'])
      expect(csvField(value), JSON.stringify(value)).toBe(`"'${value}"`);
  });

  it('leave plain numbers and other text alone, negative amounts too', () => {
    for (const value of ['-25.00', '-1', '-0.5', '150.00', '1-2', 'may-0001', 'A=B', ' =1'])
      expect(csvField(value), value).toBe(`"${value}"`);
  });
});
