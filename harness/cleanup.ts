// What the soak and the bench started, stopped in order when they end or are asked to (Ctrl-C,
// SIGTERM, the terminal closing: stack/stop-signals.ts), and what leaving at once must still do.
import { offStopSignal, onStopSignal } from '../stack/stop-signals.ts';

/**
 * Stop functions, run last-in first-out, once; one added after the run is run at once. And what
 * must not outlive the command when it leaves without them (a second Ctrl-C): run at once, all.
 */
export interface Cleanup {
  add(stop: () => Promise<unknown>): void;
  run(): Promise<void>;
  /** Registers what leaving now must still do; synchronous, as the process exits right after. */
  onLeave(leave: () => void): void;
  /** Runs every `onLeave`, once: the caller exits next. */
  leaveNow(): void;
}

export function createCleanup(log: (line: string) => void): Cleanup {
  const stops: Array<() => Promise<unknown>> = [];
  const leaves: Array<() => void> = [];
  let running: Promise<void> | undefined;
  const runOne = (stop: () => Promise<unknown>) =>
    stop().then(
      () => undefined,
      (error: Error) => log(`cleanup: ${error.message}`),
    );
  return {
    add(stop) {
      if (running) void running.then(() => runOne(stop));
      else stops.push(stop);
    },
    run() {
      running ??= (async () => {
        while (stops.length > 0) await runOne(stops.pop()!);
      })();
      return running;
    },
    onLeave(leave) {
      leaves.push(leave);
    },
    leaveNow() {
      for (const leave of leaves.splice(0)) {
        try {
          leave();
        } catch (error) {
          log(`cleanup: ${(error as Error).message}`);
        }
      }
    },
  };
}

/**
 * The soak's and the bench's answer to a stop signal: the first stops everything the run started,
 * in order (`cleanup.run()`), and exits 130; a second leaves at once, after `cleanup.leaveNow()`
 * (the API's and workers' process groups killed: no signal of the terminal's reaches them).
 */
export function exitOnStopSignals(
  cleanup: Cleanup,
  log: (line: string) => void,
  what: 'soak' | 'bench',
): { interrupted: () => boolean; off: () => void } {
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      cleanup.leaveNow();
      process.exit(130);
    }
    interrupted = true;
    log(`${signal}: stopping everything the ${what} started...`);
    void cleanup.run().then(() => process.exit(130));
  };
  onStopSignal(onSignal);
  return { interrupted: () => interrupted, off: () => offStopSignal(onSignal) };
}
