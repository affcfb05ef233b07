// The worker started before Temporal is reachable: it waits and retries (a restart of both, a
// compose `up`) instead of exiting, and SIGTERM still stops it cleanly while it waits.
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { nodeArgsFor } from '../support/node-entry.ts';

const root = path.resolve(import.meta.dirname, '../..');

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('worker start-up without Temporal', () => {
  let stack: PartnerStack;
  beforeAll(async () => {
    stack = await startPartnerStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('retries the connection, then stops on SIGTERM with exit 0', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const worker = spawn(process.execPath, nodeArgsFor('worker/main.ts'), {
      cwd: root,
      env: { ...stack.workerEnv(), TEMPORAL_ADDRESS: address, LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    const retried = new Promise<void>((resolve) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if ((output.match(/Temporal not reachable yet/g) ?? []).length >= 2) resolve();
      };
      worker.stdout.on('data', onData);
      worker.stderr.on('data', onData);
    });
    const first = await Promise.race([retried.then(() => 'retrying' as const), exited.then(() => 'exited' as const)]);
    expect(first, output).toBe('retrying');
    expect(worker.exitCode).toBeNull();
    worker.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    expect(output).toContain('stopped before Temporal was reachable');
    expect(output).toContain(address);
  }, 60_000);
});
