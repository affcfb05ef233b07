// walletflow's API as production runs it: `api/main.ts` in a process of its own, its V8 old
// generation capped as the image and the stacks cap it (apiEnvironment: apiNodeOptions, whatever
// the test runner's own NODE_OPTIONS say), on a test stack's settings (PartnerStack.workerEnv). A
// test that asks whether the API survives something asks this process: it is the one that can run
// out of memory, and whether it did shows in its exit.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { apiEnvironment, handOverSocket } from '../../stack/child-process.ts';
import { holdFreePort } from '../../stack/ports.ts';
import { nodeArgsFor } from './node-entry.ts';
import { waitFor } from './wait-for.ts';

const root = path.resolve(import.meta.dirname, '../..');

export interface ApiProcess {
  base: string;
  /** The last 20,000 characters it wrote, stdout and stderr together. */
  output(): string;
  /** How it ended, once it has: its exit code or signal. */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | null;
  /** Stops it (SIGTERM) and waits for its exit. */
  stop(): Promise<void>;
}

/** Starts the API on `env` (its OPS_API_KEYS among them) and waits until it answers /healthz. */
export async function startApiProcess(env: NodeJS.ProcessEnv): Promise<ApiProcess> {
  // Its socket, handed over already listening: no other process can take the port before the API starts.
  const socket = await holdFreePort();
  const handedOver = handOverSocket(socket);
  const base = `http://127.0.0.1:${socket.port}`;
  const child = spawn(process.execPath, nodeArgsFor('api/main.ts'), {
    cwd: root,
    env: apiEnvironment({
      ...env,
      NODE_OPTIONS: '',
      ...handedOver.env,
      HOST: '127.0.0.1',
      SESSION_ALLOWED_IPS: '127.0.0.1',
    }),
    stdio: handedOver.stdio,
  });
  // The API holds its own copy: once it exits, the port refuses.
  await socket.close();
  let output = '';
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let ended: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      ended = { code, signal };
      resolve();
    }),
  );
  const api: ApiProcess = {
    base,
    output: () => output,
    exited: () => ended,
    async stop() {
      if (!ended) child.kill('SIGTERM');
      await exit;
    },
  };
  try {
    await waitFor(
      'the API process answers /healthz',
      async () => {
        if (ended) throw new Error(`the API process exited (${JSON.stringify(ended)}):\n${output}`);
        return (await fetch(`${base}/healthz`).catch(() => null))?.status === 200 ? true : undefined;
      },
      90_000,
      () => output,
    );
  } catch (error) {
    await api.stop();
    throw error;
  }
  return api;
}
