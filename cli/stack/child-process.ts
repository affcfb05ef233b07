// Runs a walletflow process (api, worker) as a child of `walletflow dev`: TypeScript through tsx (or
// its compiled JavaScript when the CLI itself runs compiled),
// output prefixed with its name, its own process group so the parent controls the stop order.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { entryArgs } from '../../lib/project-root.ts';

export interface ManagedChild {
  name: string;
  process: ChildProcess;
  exited: Promise<number | null>;
  stop(graceMs?: number): Promise<void>;
}

export function startTsChild(name: string, entry: string, env: NodeJS.ProcessEnv, root: string): ManagedChild {
  const child = spawn(process.execPath, entryArgs(entry), {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream }).on('line', (line) => process.stdout.write(`[${name}] ${line}\n`));
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(-child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, process: child, exited, stop };
}
