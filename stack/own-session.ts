// Ctrl-C at a terminal signals every process of the foreground process group at once. A command
// that starts its own PostgreSQL and Temporal (dev, soak, bench) must stop them after the worker
// and the API that use them, yet both would be in the command's group: they stopped at the same
// instant as the command, before the worker, whose in-flight activities then failed on a closed
// database and whose stop waited out its 15 s grace against a Temporal that was gone.
//
// So such a command runs twice: a front process, in the terminal's group, that starts the command
// again in a session of its own (`detached`) and passes it the stop signals it gets, then exits as
// it did; and that run, with everything it starts, which no terminal signal reaches except through
// the front, so it stops them in its own order. Should the front end without passing a signal
// (killed), the run sees its IPC channel close and stops as if it had been asked to.
//
// Limit: a Ctrl-C that comes while the run is blocked in a synchronous step (the first `walletflow dev`
// on a machine builds the Temporal CLI with Go: minutes) is answered once that step has ended; the
// terminal's signal no longer ends the build itself.
import { spawn } from 'node:child_process';
import os from 'node:os';

/** Set in the run the front started (and removed from its environment, so that its own children never see it). */
const marker = 'WALLETFLOW_OWN_SESSION';

const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * In the front: starts this command again in a session of its own and never returns (it exits
 * with the run's code). In the run: returns, and turns the front's end into SIGTERM.
 */
export async function runInOwnSession(): Promise<void> {
  if (process.env[marker] === '1') {
    delete process.env[marker];
    // The front gone without a word (SIGKILL): stop in order, as on SIGTERM (stack/stop-signals.ts). Gone before this
    // listener was there (nothing is started yet): end now.
    const frontGone = () => process.kill(process.pid, 'SIGTERM');
    process.once('disconnect', frontGone);
    if (!process.connected) frontGone();
    process.channel?.unref();
    return;
  }
  const run = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [marker]: '1' },
  });
  // A closed output must not end the front before the run has stopped (stack/stop-signals.ts).
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  for (const signal of stopSignals) process.on(signal, () => run.kill(signal));
  await new Promise<never>(() => {
    run.once('exit', (code, signal) => {
      // What the run left in its session when it had to leave at once (a second Ctrl-C: the soak and the bench exit
      // without waiting for their stops) gets what a terminal's Ctrl-C gave it before: SIGINT, to the run's process
      // group (PostgreSQL's fast shutdown, Temporal's stop). After an orderly stop there is nothing left in it.
      try {
        process.kill(-run.pid!, 'SIGINT');
      } catch {
        // the group is empty: nothing was left
      }
      if (signal) {
        for (const stop of stopSignals) process.removeAllListeners(stop);
        process.kill(process.pid, signal);
      }
      process.exit(code ?? 128 + (os.constants.signals[signal!] ?? 0));
    });
    run.once('error', (error) => {
      process.stderr.write(`walletflow: could not start the command in a session of its own: ${error.message}\n`);
      process.exit(1);
    });
  });
}
