// A worker as production runs it: `worker/main.ts` compiled (node-entry.ts) in a process of its own,
// on a test stack's settings (PartnerStack.workerEnv), so a test can kill it (SIGKILL) mid-work and
// start another. The same for any entry point (the API), and for another tree's, from its sources
// through tsx (`cwd`: the previous release's processes).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { nodeArgsFor } from './node-entry.ts';
import { waitFor } from './wait-for.ts';

const root = path.resolve(import.meta.dirname, '../..');

export interface WorkerProcess {
  /** The last 20,000 characters it wrote, stdout and stderr together. */
  output(): string;
  /** Sends the signal (if it still runs) and waits for it to exit. */
  stop(signal: NodeJS.Signals): Promise<void>;
  /** Freezes it (SIGSTOP), as a paused VM or a stop-the-world stall would. */
  freeze(): void;
  /** Resumes it after a freeze (SIGCONT). */
  resume(): void;
  /** Resolves once it says `worker polling`; throws with its last output after `timeoutMs`. */
  polling(timeoutMs?: number): Promise<void>;
}

export function startWorkerProcess(
  env: NodeJS.ProcessEnv,
  options: { cwd?: string; entry?: string } = {},
): WorkerProcess {
  const entry = options.entry ?? 'worker/main.ts';
  const anotherTree = options.cwd !== undefined && path.resolve(options.cwd) !== root;
  const child = spawn(process.execPath, anotherTree ? ['--import', 'tsx', entry] : nodeArgsFor(entry), {
    cwd: options.cwd ?? root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    output: () => output,
    async stop(signal) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        // A frozen process must be resumed to act on anything but SIGKILL.
        if (signal !== 'SIGKILL') child.kill('SIGCONT');
      }
      await exited;
    },
    freeze() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGSTOP');
    },
    resume() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGCONT');
    },
    async polling(timeoutMs = 90_000) {
      await waitFor(
        'the worker process polling',
        () => (output.includes('worker polling') ? true : undefined),
        timeoutMs,
        () => output.slice(-3000),
      );
    },
  };
}
