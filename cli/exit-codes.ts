// The exit codes of the ops commands (fund, pay, status) and the error for bad input found before
// any request. Imports nothing, so every command module can use it without an import circle.

export const exitCodes = {
  ok: 0,
  /** The funding ended other than APPROVED, or `status` of an unknown funding. */
  failed: 1,
  /** Still not final when --timeout ran out: the funding goes on. */
  timeout: 2,
  /** The API refused the request, answered with an error, or could not be reached. */
  api: 3,
  /**
   * `settlement-report`: every line matched, but the report is of the day so far, not the whole day (the day is not
   * over in SETTLEMENT_TZ): a job that checks a day by its exit code does not take today's for the day.
   */
  daySoFar: 4,
  /** Bad command-line input (EX_USAGE). */
  usage: 64,
  /** No ops API key or an unreadable key file (EX_CONFIG, as elsewhere in walletflow). */
  config: 78,
  /** Interrupted (Ctrl-C) while following. */
  interrupted: 130,
} as const;

/** A usage or configuration problem found before any request: message and exit code. */
export class CliInputError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}
