// The soak's and the bench's second Ctrl-C (harness/cleanup.ts exitOnStopSignals): the run leaves
// at once, and the processes it supervises, each in a process group of its own that no signal of
// the terminal's reaches, leave with it rather than run on with nobody to stop them.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a second stop signal', () => {
  it('leaves at once with exit code 130, and kills the process groups the run supervises', async () => {
    const run = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'test/support/leave-now-run.ts')], {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    run.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => run.once('exit', (code) => resolve(code)));
    const waitFor = async (pattern: RegExp) => {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return pattern.exec(output)!;
    };
    let childPid = 0;
    try {
      childPid = Number((await waitFor(/child (\d+)/))[1]);
      expect(alive(childPid)).toBe(true);
      // In a group of its own: the terminal's Ctrl-C to the run's group does not reach it.
      process.kill(-run.pid!, 'SIGINT');
      await waitFor(/SIGINT: stopping everything the soak started/);
      // The child ignores the stop's SIGTERM; the run would kill it only after 10 s: the user leaves first.
      process.kill(-run.pid!, 'SIGINT');
      expect(await exited).toBe(130);
      const deadline = Date.now() + 5000;
      while (alive(childPid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive(childPid)).toBe(false);
    } finally {
      for (const pid of [run.pid!, childPid].filter((pid) => pid > 0)) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }, 90_000);
});
