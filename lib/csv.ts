// CSV fields for the reports walletflow writes (a day's settlement, a batch's items): always
// quoted, quotes doubled, and a leading = + - @ prefixed so a spreadsheet never reads a formula.
export function csvField(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  return `"${(/^[=+\-@]/.test(text) && !/^-?\d/.test(text) ? `'${text}` : text).replace(/"/g, '""')}"`;
}

/** One CSV line (CRLF-terminated) of the fields in order. */
export const csvLine = (fields: ReadonlyArray<string | number | null>): string => `${fields.map(csvField).join(',')}\r\n`;
