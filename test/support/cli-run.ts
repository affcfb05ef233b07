// Runs the real `walletflow` CLI as a child process (compiled, node-entry.ts; cwd the project root, stdout a pipe so it
// is not a terminal) and collects its exit code and output: a command that answers (runCli), or
// a long run that starts a stack of its own, the soak or the bench (runLongCli).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { nodeArgsFor } from './node-entry.ts';
import { testDatabaseServerUrl } from './test-database.ts';

const root = path.resolve(import.meta.dirname, '../..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {},
): Promise<CliResult> {
  // No ambient ops settings from the developer's shell: each test says what the CLI gets.
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  for (const name of [
    'WALLETFLOW_API_URL',
    'WALLETFLOW_OPS_KEY',
    'WALLETFLOW_OPS_KEY_FILE',
    'OPS_API_KEYS',
    'OPS_API_KEYS_FILE',
  ]) {
    if (!options.env?.[name]) delete env[name];
  }
  const child = spawn(process.execPath, [...nodeArgsFor('cli/main.ts'), ...args], {
    cwd: root,
    env,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timeoutMs = options.timeoutMs ?? 90_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `walletflow ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface LongCliResult {
  code: number | null;
  /** stdout and stderr, interleaved as they came. */
  output: string;
}

/**
 * A long run in the test's own environment. Too slow: SIGTERM at `timeoutMs`, so the command stops
 * everything it started; SIGKILL `graceMs` later, only as a last resort. Resolves when it exits.
 */
export function runLongCli(args: string[], options: { timeoutMs: number; graceMs: number }): Promise<LongCliResult> {
  const child = spawn(process.execPath, [...nodeArgsFor('cli/main.ts'), ...args], {
    cwd: root,
    // A fresh database on the suite's PostgreSQL server (harness/local-stack.ts), not a server of its own.
    env: { ...process.env, DATABASE_URL: testDatabaseServerUrl() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), options.graceMs).unref();
    }, options.timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
