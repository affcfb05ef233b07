// CSV fields for the reports walletflow writes (a day's settlement, a batch's items): always
// quoted, quotes doubled, and a value a spreadsheet would run as a formula written as text (a
// leading `'`). OWASP's CSV injection list: a value starting with =, +, -, @, a tab or a carriage
// return. A `-` starts a formula unless the whole value is a plain number (`-25.00`, a negative
// amount, stays a number; `-1+1` or `-2+3+cmd|…` do not).
const formulaStart = /^[=+@\t\r]|^-(?!\d+(?:\.\d+)?$)/;

export function csvField(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  return `"${(formulaStart.test(text) ? `'${text}` : text).replace(/"/g, '""')}"`;
}

/** One CSV line (CRLF-terminated) of the fields in order. */
export const csvLine = (fields: ReadonlyArray<string | number | null>): string => `${fields.map(csvField).join(',')}\r\n`;
