// The README's main job as a user runs it: `walletflow dev` on embedded defaults brings up
// PostgreSQL, Temporal (with its Web UI), the sandbox, the worker and the API; /readyz reports all
// three dependencies up; the CLI funds a test user by code and by link, and the fundings are
// searchable by status in Temporal; the sample batch waits for approval (the demo's threshold),
// and uploaded in the console as `maker` it runs once `checker` approves it; Ctrl-C (SIGINT to the process group) stops
// everything; a
// second start reuses the data and stops everything too when whatever read its output is gone
// first (`walletflow dev | tee dev.log`, where Ctrl-C ends tee as well).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePorts, isListening } from '../../stack/ports.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { nodeArgsFor } from '../support/node-entry.ts';

const root = path.resolve(import.meta.dirname, '../..');
const stateDir = mkdtempSync(path.join(tmpdir(), 'walletflow-dev-'));
/** Every start, so that a failed assertion does not leave a stack running for the rest of the suite. */
const started: ChildProcess[] = [];

interface DevRun {
  child: ChildProcess;
  output: () => string;
  ports: Record<string, number>;
}

async function startDev(given: NodeJS.ProcessEnv = {}): Promise<DevRun> {
  // Seven ports, all different (found one by one, two could be the same: PostgreSQL's and Temporal's once).
  const names = ['api', 'sandbox', 'postgres', 'temporal', 'temporalUi', 'workerMetrics', 'identityProvider'];
  const found = await findFreePorts(names.length);
  const ports: Record<string, number> = Object.fromEntries(names.map((name, index) => [name, found[index]!]));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(ports.api),
    SANDBOX_PORT: String(ports.sandbox),
    WALLETFLOW_POSTGRES_PORT: String(ports.postgres),
    WALLETFLOW_TEMPORAL_PORT: String(ports.temporal),
    WALLETFLOW_TEMPORAL_UI_PORT: String(ports.temporalUi),
    WORKER_METRICS_PORT: String(ports.workerMetrics),
    WALLETFLOW_IDP_PORT: String(ports.identityProvider),
    WALLETFLOW_STATE_DIR: stateDir,
  };
  for (const name of [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'CONNECT_URL',
    'OP_URL',
    'TRANSFER_URL',
    'OPS_API_KEYS',
    'TOKEN_ENCRYPTION_KEY',
    'CONSOLE_OIDC_ISSUER',
    'CONSOLE_OIDC_CLIENT_ID',
    'CONSOLE_OIDC_CLIENT_SECRET',
    'CONSOLE_OIDC_ROLES',
    'BATCH_APPROVAL_THRESHOLD',
  ]) {
    delete env[name];
    delete env[`${name}_FILE`];
  }
  Object.assign(env, given);
  // Its own process group, as a terminal would run it, so SIGINT reaches the group like Ctrl-C.
  const child = spawn(process.execPath, [...nodeArgsFor('cli/main.ts'), 'dev'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 150_000;
  while (!output.includes('walletflow is running')) {
    if (child.exitCode !== null) throw new Error(`walletflow dev exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`walletflow dev did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { child, output: () => output, ports };
}

async function interrupt(run: DevRun, options: { closeOutputFirst?: boolean } = {}): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)));
  if (options.closeOutputFirst) {
    run.child.stdout?.destroy();
    run.child.stderr?.destroy();
  }
  process.kill(-run.child.pid!, 'SIGINT');
  return exited;
}

afterAll(async () => {
  // A test that failed half-way stops its stack as Ctrl-C would (the stack stops what it started).
  for (const child of started.filter((run) => run.exitCode === null && run.signalCode === null)) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGINT');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  }
  rmSync(stateDir, { recursive: true, force: true });
}, 90_000);

describe('walletflow dev', () => {
  it('brings the stack up, reports it ready, and stops it all on Ctrl-C; a second start reuses the data', async () => {
    const first = await startDev();
    const base = `http://127.0.0.1:${first.ports.api}`;
    expect(first.output()).toContain(base);
    expect(first.output()).toContain(`http://127.0.0.1:${first.ports.temporalUi}`);
    expect(first.output()).toMatch(/migrations: applied/);
    expect(first.output()).toMatch(/09171234567 +password/);
    // The partner ledger it seeded: the treasury's float and each test user's partner balance.
    expect(first.output()).toMatch(
      /partner ledger +treasury 96980\.00 PHP available \(float 100000\.00 from CAPITAL\)/,
    );
    expect(first.output()).toMatch(/Ana Reyes +partner balance +2500\.00 PHP +\(wallet:\d+\)/);
    expect(first.output()).toMatch(/Carla Santos +partner balance +20\.00 PHP/);
    // The launcher shows them, read with a key of this run that neither page nor output shows.
    const launcher = await (await fetch(`http://127.0.0.1:${first.ports.sandbox}/_sandbox/launcher`)).text();
    expect(launcher).toContain('partner balance PHP 2500.00');
    expect(launcher).not.toMatch(/wf_dev_(launcher|seed)_/);
    expect(first.output()).not.toMatch(/wf_dev_(launcher|seed)_/);

    const ready = await fetch(`${base}/readyz`);
    const body = (await ready.json()) as { status: string };
    expect(ready.status, JSON.stringify(body)).toBe(200);
    expect(body.status).toBe('ready');
    const ui = await fetch(`http://127.0.0.1:${first.ports.temporalUi}/`);
    expect(ui.status).toBe(200);
    const partner = await fetch(`http://127.0.0.1:${first.ports.sandbox}/_sandbox/partner`);
    const registration = (await partner.json()) as { clientId: string; redirectUri: string };
    expect(registration.redirectUri).toBe(`${base}/connect/callback`);

    // As a new user would: fund a sandbox user by code and by link with the CLI, no flags but the API.
    const anaId = /09171234567 .*\(userId ([0-9a-f-]{36})\)/.exec(first.output())?.[1];
    const linkId = /fund --link ([0-9a-f-]{36})/.exec(first.output())?.[1];
    expect(anaId && linkId).toBeTruthy();
    const { code } = (await (
      await fetch(`http://127.0.0.1:${first.ports.sandbox}/_sandbox/users/${anaId}/cash-in-codes`, { method: 'POST' })
    ).json()) as { code: string };
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [...nodeArgsFor('cli/main.ts'), ...args], {
        cwd: root,
        env: {
          ...process.env,
          PORT: String(first.ports.api),
          WALLETFLOW_STATE_DIR: stateDir,
          OPS_API_KEYS: '',
          WALLETFLOW_OPS_KEY: '',
        },
        encoding: 'utf8',
        timeout: 120_000,
      });
    const byCode = cli(['fund', '--code', code, '--amount', '100.50']);
    expect(byCode.status, byCode.stdout + byCode.stderr).toBe(0);
    expect(byCode.stdout).toContain('APPROVED');
    expect(byCode.stdout).not.toContain(code);
    const byLink = cli(['fund', '--link', linkId!, '--amount', '25.00']);
    expect(byLink.status, byLink.stdout + byLink.stderr).toBe(0);

    // The summary's batch: its sample file of 300 items (300.00 PHP), at or above the demo's approval
    // threshold, so created with the CLI it waits for another person; cancelled here, its codes unused.
    expect(first.output()).toMatch(
      /batch approval +a batch of 100\.00 PHP or more waits for another person's approval \(BATCH_APPROVAL_THRESHOLD, set for this demo\): upload one as maker, approve it as checker/,
    );
    const sample = /batches create --file (\S+)/.exec(first.output())?.[1];
    expect(sample, first.output()).toBeTruthy();
    expect(first.output()).toMatch(
      /\(300 items, 300\.00 PHP; codes valid 30 minutes\)\n +300\.00 PHP is at or above the approval threshold: the batch waits until another person approves it \(in the console, as checker\)/,
    );
    const created = cli(['batches', 'create', '--file', sample!, '--output', 'json']);
    expect(created.status, created.stdout + created.stderr).toBe(0);
    const waiting = JSON.parse(created.stdout) as { batchId: string; state: string; total: { count: number } };
    expect(waiting).toMatchObject({ state: 'AWAITING_APPROVAL', total: { count: 300 } });
    const cancelled = cli(['batches', 'cancel', waiting.batchId, '--output', 'json']);
    expect(cancelled.status, cancelled.stdout + cancelled.stderr).toBe(0);
    expect((JSON.parse(cancelled.stdout) as { state: string }).state).toBe('CANCELLED');

    const browser = await launchChromium();
    try {
      // The README's walk-through, as a new user tries it: the maker signs in through the sandbox
      // identity provider and uploads the sample batch; it waits; the checker, in a private window,
      // approves it.
      expect(first.output()).toMatch(
        /ops console +http:\/\/127\.0\.0\.1:\d+\/console +\(sign in through the sandbox identity provider/,
      );
      expect(first.output()).toMatch(/maker +password sandbox-pass +Maria Santos/);
      const signIn = async (username: string) => {
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
        await page.goto(`${base}/console`);
        await page.getByRole('link', { name: /Sign in with/ }).click();
        await page.getByLabel('User name').fill(username);
        await page.getByLabel('Password').fill('sandbox-pass');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${base}/console`);
        return page;
      };
      const maker = await signIn('maker');
      expect(await maker.locator('header .who').innerText()).toContain('Maria Santos');
      await maker.goto(`${base}/console/batches`);
      await maker.getByLabel('Name', { exact: true }).fill('Sample rewards');
      await maker.getByLabel('CSV file').setInputFiles(path.resolve(root, sample!));
      await maker.getByRole('button', { name: 'Check and submit' }).click();
      await maker.waitForURL(/\/console\/batches\/[0-9a-f-]{36}\?did=created&proof=[\w-]+$/);
      expect(await maker.locator('.notice.ok').innerText()).toContain('It waits for another person’s approval');
      const batchId = /\/console\/batches\/([0-9a-f-]{36})/.exec(maker.url())![1]!;
      const checker = await signIn('checker');
      await checker.goto(`${base}/console/batches/${batchId}`);
      await checker.getByRole('button', { name: 'Approve' }).click();
      await checker.waitForURL(/\?did=approve&proof=[\w-]+$/);
      expect(await checker.locator('.notice.ok').innerText()).toContain('You approved the batch');

      // Followed with the CLI to COMPLETED.
      const watched = cli(['batches', 'watch', batchId]);
      expect(watched.status, watched.stdout + watched.stderr).toBe(0);
      expect(watched.stdout).toMatch(/300\/300 .*COMPLETED {2}APPROVED 300/);
      // What ops see (docs/batches.md shows it: `npm run docs:pictures` copies it to docs/images/).
      const resultsDir = path.resolve(import.meta.dirname, '../../test-results');
      mkdirSync(resultsDir, { recursive: true });
      const terminal = `$ npx walletflow batches watch ${batchId}\n${watched.stdout}`;
      writeFileSync(path.join(resultsDir, 'batches-watch.txt'), terminal);
      // The same output as a terminal shows it, as a picture for the partner's guide.
      const page = await browser.newPage({ viewport: { width: 1100, height: 120 } });
      const escaped = terminal.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
      await page.setContent(
        `<body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:16px;color:#d4d4d4;font:14px/1.5 'DejaVu Sans Mono',monospace">${escaped}</pre></body>`,
      );
      await page.screenshot({ path: path.join(resultsDir, 'batches-watch.png'), fullPage: true });

      // The batch just run is among today's fundings on the maker's home page.
      await maker.goto(`${base}/console`);
      expect(await maker.locator('#h-fundings').locator('..').innerText()).toMatch(/APPROVED\s+30\d/);
    } finally {
      await closeChromium(browser);
    }

    // Searchable by status in Temporal (what the Temporal UI queries).
    const connection = await Connection.connect({ address: `127.0.0.1:${first.ports.temporal}` });
    try {
      const client = new Client({ connection });
      const deadline = Date.now() + 20_000;
      let approved = 0;
      do {
        approved = 0;
        for await (const _ of client.workflow.list({
          query: 'WalletflowStatus = "APPROVED" AND WalletflowKind = "FUNDING"',
        }))
          approved += 1;
        if (approved < 2) await new Promise((resolve) => setTimeout(resolve, 300));
      } while (approved < 2 && Date.now() < deadline);
      expect(approved).toBeGreaterThanOrEqual(2);
    } finally {
      await connection.close();
    }

    expect(await interrupt(first)).toBe(0);
    expect(first.output()).toContain('stopped.');
    // In order: the worker and the API stop while PostgreSQL and Temporal still serve them (Ctrl-C reaches only
    // `walletflow dev`), so neither logs a failure on its way out and the worker ends its own run.
    const stopping = first.output().slice(first.output().indexOf('stopping walletflow dev'));
    expect(stopping).toMatch(/\[worker\] .*"msg":"worker stopped"/);
    const failures = stopping
      .split('\n')
      .filter((line) => /^\[(worker|api)\] .*("level":[4-6]\d|\bWARN\b|\bERROR\b)/.test(line));
    expect(failures, stopping).toEqual([]);
    for (const [name, port] of Object.entries(first.ports)) {
      expect(await isListening(port), `${name} still listening on ${port}`).toBe(false);
    }

    // The second start is given its token key and its ops keys as files (NAME_FILE), as a deployment's secrets are:
    // the API and the worker read them (they exited 78 when dev set NAME beside the NAME_FILE they inherited).
    const devState = JSON.parse(readFileSync(path.join(stateDir, 'dev-state.json'), 'utf8')) as {
      opsApiKey: string;
      tokenEncryptionKey: string;
    };
    const secretFile = (name: string, value: string) => {
      const file = path.join(stateDir, `${name}.secret`);
      writeFileSync(file, `${value}\n`, { mode: 0o600 });
      return file;
    };
    const givenKey = `wf_given_${randomBytes(24).toString('base64url')}`;
    const second = await startDev({
      TOKEN_ENCRYPTION_KEY_FILE: secretFile('token-key', devState.tokenEncryptionKey),
      OPS_API_KEYS_FILE: secretFile('ops-keys', givenKey),
    });
    expect(second.output()).toMatch(/migrations: up to date/);
    // The ops key in the file is the one the API takes, not dev's own, and, given, it is not printed.
    expect(second.output()).not.toContain(givenKey);
    const readLink = (key: string) =>
      fetch(`http://127.0.0.1:${second.ports.api}/ops/links/${linkId}`, {
        headers: { authorization: `Bearer ${key}` },
      });
    const readBack = await readLink(givenKey);
    expect(readBack.status, await readBack.clone().text()).toBe(200);
    expect((await readLink(devState.opsApiKey)).status).toBe(401);
    // The float was not posted again: 96980.00 less the two fundings (100.50, 25.00), the sample
    // batch (300 × 1.00; the cancelled one released its hold) and the new run's users' balances
    // (2500.00 + 500.00 + 20.00).
    expect(second.output()).toMatch(/partner ledger +treasury 93534\.50 PHP available/);
    const again = await fetch(`http://127.0.0.1:${second.ports.sandbox}/_sandbox/partner`);
    expect(((await again.json()) as { clientId: string }).clientId).toBe(registration.clientId);
    // Its output pipe closed before Ctrl-C: every write from here on fails with EPIPE, and the
    // stop must still go through (the worker and the API run in process groups of their own).
    expect(await interrupt(second, { closeOutputFirst: true })).toBe(0);
    for (const [name, port] of Object.entries(second.ports)) {
      expect(await isListening(port), `${name} still listening on ${port}`).toBe(false);
    }
  }, 400_000);
});
