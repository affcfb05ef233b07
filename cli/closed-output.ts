// The long-running commands (dev, soak, bench) start processes in process groups of their own and
// stop them in order on Ctrl-C. Whatever reads their output may be gone first (`… | tee run.log`
// gets the same Ctrl-C): a write to the closed pipe then fails with EPIPE, later ones with
// ERR_STREAM_DESTROYED, and unhandled, that error would end the command before it has stopped its
// children, leaving them behind. There is nowhere left to report it, so it is dropped.
export function survivesClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => undefined);
  }
}

/** The signals that ask a long-running command to stop everything it started. */
export const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
