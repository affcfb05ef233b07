// The long-running commands (dev, soak, bench) run in a session of their own (stack/own-session.ts),
// start the worker and the API in process groups of their own, and stop what they started in order
// when asked to stop (Ctrl-C, SIGTERM, the terminal closing).
//
// Whatever reads their output may be gone first (`… | tee run.log` gets the same Ctrl-C): a write
// to the closed pipe then fails with EPIPE, later ones with ERR_STREAM_DESTROYED, and unhandled,
// that error would end the command before it has stopped its children, leaving them behind. There
// is nowhere left to report it, so it is dropped.

const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Calls `stop` on SIGINT, SIGTERM and SIGHUP, and keeps the process alive through a closed output. */
export function onStopSignal(stop: (signal: NodeJS.Signals) => void): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => undefined);
  }
  for (const signal of stopSignals) process.on(signal, stop);
}

/** Removes what `onStopSignal` added for `stop`, on all three signals. */
export function offStopSignal(stop: (signal: NodeJS.Signals) => void): void {
  for (const signal of stopSignals) process.off(signal, stop);
}
