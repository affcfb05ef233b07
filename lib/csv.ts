// CSV fields for the reports walletflow writes (a day's settlement, a batch's items): always
// quoted, quotes doubled, and a value a spreadsheet would run as a formula written as text (a
// leading `'`). OWASP's CSV injection list: a value starting with =, +, -, @, a tab or a carriage
// return. A `-` starts a formula unless the whole value is a plain number (`-25.00`, a negative
// amount, stays a number; `-1+1` or `-2+3+cmd|…` do not).
const formulaStart = /^[=+@\t\r]|^-(?!\d+(?:\.\d+)?$)/;

export type CsvValue = string | number | null;

/** A CSV report to stream (api/http/csv-stream.ts): its header line, then its rows as they are read. */
export interface CsvReport {
  /** What the report is, as its metrics and log lines name it (a fixed word: `batch-report`). */
  report: string;
  /**
   * The column names, written as one CSV line; or that line itself, as a report has always written it
   * (CRLF-terminated).
   */
  header: readonly string[] | string;
  /** The rows, read as they are taken: a page at a time from the database (lib/keyset-rows.ts). */
  rows: AsyncIterable<readonly CsvValue[]>;
}

export function csvField(value: CsvValue): string {
  const text = value === null ? '' : String(value);
  return `"${(formulaStart.test(text) ? `'${text}` : text).replace(/"/g, '""')}"`;
}

/** One CSV line (CRLF-terminated) of the fields in order. */
export const csvLine = (fields: readonly CsvValue[]): string => `${fields.map(csvField).join(',')}\r\n`;
