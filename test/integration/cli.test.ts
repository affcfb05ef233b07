// The `walletflow` commands as a user runs them: the real CLI in a child process against the real
// API, Temporal worker, PostgreSQL and sandbox (the key from WALLETFLOW_OPS_KEY, never a flag):
// fund, pay and status, usage errors (64), --version; every ops route with --output json is
// cli-ops-routes.test.ts's. Plus the terminal renderer fed with fundings directly.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fundingSchema, type FundingView } from '../../domain/funding.ts';
import { createFundingProgress } from '../../cli/progress.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { runCli as runCliWith } from '../support/cli-run.ts';
import { useCliStack } from '../support/cli-stack.ts';

describe('walletflow fund and status against a running stack', () => {
  const { stack, target, runCli, codeFor } = useCliStack();
  const fundingIdIn = (stdout: string) => /funding ([0-9a-f-]{36})/.exec(stdout)?.[1] ?? '';

  it('reads the cash-in code from standard input with --code alone, so it is in neither the shell history nor ps', async () => {
    const { code } = await codeFor('KYC1');
    const result = await runCliWith(['fund', '--code', '--amount', '3.00', ...target()], {
      env: { WALLETFLOW_OPS_KEY: stack().opsKey },
      input: `${code}\n`,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`*****${code.slice(-2)}`);
    expect(result.stdout + result.stderr).not.toContain(code);
    expect(result.stderr).not.toContain('shell history');
  });

  it('funds by cash-in code: plain timeline lines, exit 0, the code never printed whole', async () => {
    const { user, code } = await codeFor('KYC1');
    const result = await runCli(['fund', '--code', code, '--amount', '100.50', ...target()]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']) {
      expect(
        lines.some((line) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+${status}\\b`).test(line)),
        status,
      ).toBe(true);
    }
    expect(result.stdout).toMatch(/EXECUTING\s+transfer \S+ created; executing\s+\(ref [0-9a-f-]{36}\)/);
    expect(result.stdout).toMatch(/idempotency key [0-9a-f-]{36}/);
    expect(result.stdout).toContain(`*****${code.slice(-2)}`);
    expect(result.stdout).not.toContain('\x1b[');
    const summary = lines.filter((line) => line !== '').at(-1) ?? '';
    expect(summary).toMatch(/^funding [0-9a-f-]{36}\s+APPROVED\s+transfer \S+$/);
    expect(result.stdout + result.stderr).not.toContain(code);
    expect(result.stdout + result.stderr).not.toContain(stack().opsKey);
    expect((await stack().admin.user(user.userId)).balance).toBe('200.50');
  });

  it('a KYC0 wallet: REJECTED with M133 and the upgrade guidance, exit 1', async () => {
    const { code } = await codeFor('KYC0');
    const result = await runCli(['fund', '--code', code, '--amount', '5', ...target()]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/REJECTED/);
    expect(result.stdout).toMatch(/error M133: .*upgrade/i);
    expect(result.stdout + result.stderr).not.toContain(code);
  });

  it('funds a linked wallet by --link, exit 0', async () => {
    const { user, linkId } = await createEmbeddedLink(stack(), { kycLevel: 'KYC1', balance: '0.00' });
    const result = await runCli(['fund', '--link', linkId, '--amount', '25.00', ...target()]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`link ${linkId}`);
    expect(result.stdout).toMatch(/APPROVED/);
    expect((await stack().admin.user(user.userId)).balance).toBe('25.00');
  });

  it('refuses bad input with exit 64 before calling the API', async () => {
    const key = `cli-bad-${randomUUID()}`;
    const result = await runCli([
      'fund',
      '--code',
      '1234567',
      '--amount',
      '1.005',
      '--idempotency-key',
      key,
      ...target(),
    ]);
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(/--amount: .*decimals/);
    expect(result.stdout).toBe('');
    expect(await stack().database.funding.count({ where: { idempotencyKey: key } })).toBe(0);

    const both = await runCli(['fund', '--code', '1234567', '--link', randomUUID(), '--amount', '1', ...target()]);
    expect(both.code).toBe(64);
    expect(both.stderr).toMatch(/exactly one/);
    expect(both.stdout + both.stderr).not.toContain('1234567');
  });

  it('a wrong ops key: exit 3 with the 401 problem', async () => {
    const result = await runCli(['fund', '--code', '1234567', '--amount', '1.00', '--api', stack().apiBase], {
      WALLETFLOW_OPS_KEY: 'not-the-key',
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/401 UNAUTHORIZED: the ops API key is not valid/);
    expect(result.stdout + result.stderr).not.toContain('not-the-key');
  });

  it('an API that is not running: exit 3, says where it looked', async () => {
    const { findFreePort } = await import('../../stack/ports.ts');
    const api = `http://127.0.0.1:${await findFreePort()}`;
    const result = await runCli(['status', randomUUID(), '--api', api], { WALLETFLOW_OPS_KEY: 'anything' });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`not reachable at ${api}`);
    expect(result.stderr).toContain('npm run dev');
  });

  it('--no-wait returns once accepted; status prints the timeline; --json is a funding', async () => {
    const { code } = await codeFor('KYC1');
    const started = await runCli(['fund', '--code', code, '--amount', '3.00', '--no-wait', ...target()]);
    expect(started.code, started.stderr).toBe(0);
    const fundingId = fundingIdIn(started.stdout);
    expect(fundingId).not.toBe('');
    expect(started.stdout).toContain(`walletflow status ${fundingId}`);

    // Wait until the workflow is done, then read it back through the CLI.
    const deadline = Date.now() + 60_000;
    let json: FundingView | undefined;
    while (Date.now() < deadline) {
      const answer = await runCli(['status', fundingId, '--json', ...target()]);
      expect(answer.code, answer.stderr).toBe(0);
      json = fundingSchema.parse(JSON.parse(answer.stdout));
      if (json.status === 'APPROVED') break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(json?.status).toBe('APPROVED');
    expect(json?.recipient).toEqual({ type: 'CODE', masked: `*****${code.slice(-2)}` });

    const shown = await runCli(['status', fundingId, ...target()]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status\s+APPROVED$/m);
    expect(shown.stdout).toMatch(/^amount\s+3\.00 PHP$/m);
    expect(shown.stdout).toMatch(/TIME\s+STATUS\s+REQUEST-REFERENCE-NO\s+DETAIL/);
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'APPROVED'])
      expect(shown.stdout).toMatch(new RegExp(`Z\\s+${status}\\s`));
    expect(shown.stdout).toContain(json?.events.at(-1)?.requestReferenceNo ?? 'missing');
    expect(shown.stdout + started.stdout).not.toContain(code);
  });

  it('not final within --timeout: exit 2, the funding goes on; the printed key resumes it', async () => {
    const { code } = await codeFor('KYC1');
    await stack().stopWorker();
    let first;
    try {
      first = await runCli(['fund', '--code', code, '--amount', '2.00', '--timeout', '1', ...target()]);
    } finally {
      await stack().startWorker();
    }
    expect(first.code, first.stderr).toBe(2);
    const fundingId = fundingIdIn(first.stdout);
    expect(first.stderr).toContain(
      `still PENDING after 1 s; the funding goes on. Check it with: walletflow status ${fundingId}`,
    );
    const key = /idempotency key (\S+)/.exec(first.stdout)?.[1] ?? '';

    const retried = await runCli(['fund', '--code', code, '--amount', '2.00', '--idempotency-key', key, ...target()]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`used before with the same request: funding ${fundingId}`);
    expect(await stack().database.funding.count({ where: { idempotencyKey: key } })).toBe(1);
  });

  it('status of an unknown funding: exit 1', async () => {
    const id = randomUUID();
    const result = await runCli(['status', id, ...target()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no funding ${id}`);
  });

  async function linkedUser(balance: string) {
    return createEmbeddedLink(stack(), { kycLevel: 'KYC1', balance });
  }

  it('pay: a merchant payment from a linked wallet, one line per step, exit 0; too little balance exits 1', async () => {
    const { user, linkId } = await linkedUser('50.00');
    const paid = await runCli(['pay', '--link', linkId, '--amount', '20.00', ...target()]);
    expect(paid.code, paid.stderr).toBe(0);
    for (const status of ['PENDING', 'CREATING', 'EXECUTING', 'SUCCEEDED']) {
      expect(paid.stdout, status).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+${status}\\b`, 'm'));
    }
    expect(paid.stdout).toMatch(/^payment [0-9a-f-]{36}\s+SUCCEEDED\s+wallet payment \S+/m);
    expect(Number((await stack().admin.user(user.userId)).balance)).toBeLessThanOrEqual(30);
    expect(paid.stdout + paid.stderr).not.toContain(stack().opsKey);

    const refused = await runCli(['pay', '--link', linkId, '--amount', '500.00', ...target()]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toMatch(/FAILED.*error INSUFFICIENT_BALANCE/);

    const bad = await runCli(['pay', '--link', 'not-a-link', '--amount', '-1', ...target()]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--link: .*UUID/);
    expect(await stack().database.payment.count({ where: { linkId } })).toBe(2);
  });

  it('the key comes from WALLETFLOW_OPS_KEY_FILE; --key is refused (exit 64) without echoing it', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'wf-key-')), 'ops-key');
    writeFileSync(file, `${stack().opsKey}\n`, { mode: 0o600 });
    const fromFile = await runCli(['fundings', 'list', '--limit', '1', '--output', 'json', ...target()], {
      WALLETFLOW_OPS_KEY_FILE: file,
    });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toHaveProperty('items');

    const flagged = await runCli(['fundings', 'list', '--key', 'typed-secret-value', ...target()]);
    expect(flagged.code).toBe(64);
    expect(flagged.stderr).toMatch(/walletflow fundings list: --key is no longer accepted.*WALLETFLOW_OPS_KEY_FILE/);
    expect(flagged.stdout + flagged.stderr).not.toContain('typed-secret-value');

    const none = await runCli(['fundings', 'list', ...target()], { WALLETFLOW_STATE_DIR: path.dirname(file) });
    expect(none.code).toBe(78);
    expect(none.stderr).toMatch(/no ops API key: set WALLETFLOW_OPS_KEY or WALLETFLOW_OPS_KEY_FILE/);
  });

  it('usage errors exit 64 before any request; --version prints the version', async () => {
    for (const args of [
      ['no-such-command'],
      ['fundings', 'list', '--status', 'NOT_A_STATUS'],
      ['fundings', 'list', '--limit', '0'],
      ['fundings', 'list', '--from', 'yesterday'],
      ['fundings', 'resolve', randomUUID(), '--outcome', 'APPROVED'],
      ['payments', 'resolve', randomUUID(), '--outcome', 'MAYBE', '--note', 'x'],
      ['links', 'find'],
      ['links', 'get'],
      ['fundings', 'get', randomUUID(), '--output', 'yaml'],
      [],
    ]) {
      const result = await runCli([...args, ...target()]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(64);
      expect(result.stdout).toBe('');
    }
    const version = await runCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it('an unknown id: get exits 1; a refused resolve exits 3 with the problem code', async () => {
    const unknown = await runCli(['payments', 'get', randomUUID(), ...target()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no payment/);
    const refused = await runCli([
      'fundings',
      'resolve',
      randomUUID(),
      '--outcome',
      'APPROVED',
      '--note',
      'x',
      ...target(),
    ]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/404 FUNDING_NOT_FOUND/);
  });
});

describe('the terminal renderer', () => {
  const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
  const event = (ms: number, status: FundingView['status'], detail: string | null, ref: string | null = null) => ({
    at: at(ms),
    status,
    requestReferenceNo: ref,
    detail,
  });
  const funding = (events: FundingView['events']): FundingView => ({
    fundingId: '00000000-0000-4000-8000-000000000000',
    status: events.at(-1)?.status ?? 'PENDING',
    recipient: { type: 'CODE', masked: '*****67' },
    amount: { currency: 'PHP', value: '1.00' },
    source: { type: 'TREASURY' },
    transferId: null,
    error: null,
    review: null,
    carriedBy: null,
    batchId: null,
    reference: null,
    createdAt: at(0),
    updatedAt: at(0),
    events,
  });
  // The screen as a terminal shows it: "\r\x1b[2K" erases the current line.
  const screen = (output: string) =>
    output
      .split('\n')
      .map((line) => line.split('\r\x1b[2K').at(-1) ?? '')
      .join('\n');

  it('redraws the current step in place and turns finished steps into ✔ lines', () => {
    let output = '';
    let now = Date.parse(at(0));
    const progress = createFundingProgress({
      tty: true,
      color: false,
      write: (text) => (output += text),
      columns: () => 200,
      now: () => now,
    });
    const pending = event(0, 'PENDING', 'funding requested');
    const creating = event(400, 'CREATING', 'creating the transfer');
    const executing = event(1000, 'EXECUTING', 'transfer t1 created; executing', 'ref-1');
    const approved = event(2500, 'APPROVED', 'APPROVED', 'ref-2');

    progress.update(funding([pending]));
    now += 300;
    progress.tick();
    expect(screen(output)).toMatch(/^\S PENDING\s+0\.3s {2}funding requested$/);

    progress.update(funding([pending, creating, executing]));
    now = Date.parse(at(1000)) + 1200;
    progress.tick();
    expect(screen(output).split('\n')).toEqual([
      '✔ PENDING       0.4s  funding requested',
      '✔ CREATING      0.6s  creating the transfer',
      expect.stringMatching(/^\S EXECUTING\s+1\.2s {2}transfer t1 created; executing {2}\(ref ref-1\)$/),
    ]);

    progress.update(funding([pending, creating, executing, approved]));
    progress.close();
    expect(screen(output).split('\n')).toEqual([
      '✔ PENDING       0.4s  funding requested',
      '✔ CREATING      0.6s  creating the transfer',
      '✔ EXECUTING     1.5s  transfer t1 created; executing  (ref ref-1)',
      '✔ APPROVED            APPROVED  (ref ref-2)',
      '',
    ]);
  });

  it('marks a refused funding ✖ and keeps the live line within the terminal width', () => {
    let output = '';
    const progress = createFundingProgress({
      tty: true,
      color: false,
      write: (text) => (output += text),
      columns: () => 30,
      now: () => Date.parse(at(0)),
    });
    progress.update(funding([event(0, 'PENDING', 'a rather long detail that would wrap a narrow terminal')]));
    expect(screen(output).length).toBeLessThanOrEqual(29);
    progress.update(funding([event(0, 'PENDING', 'x'), event(100, 'REJECTED', 'M133', 'ref-9')]));
    expect(screen(output).split('\n').at(-2)).toBe('✖ REJECTED            M133  (ref ref-9)');
  });

  it('writes plain lines, one per new event, when not a terminal', () => {
    let output = '';
    const progress = createFundingProgress({ tty: false, color: false, write: (text) => (output += text) });
    const first = event(0, 'PENDING', 'funding requested');
    progress.update(funding([first]));
    progress.update(funding([first]));
    progress.tick();
    progress.update(funding([first, event(5, 'CREATING', null, 'ref-1')]));
    expect(output).toBe(`${at(0)}  PENDING      funding requested\n${at(5)}  CREATING     (ref ref-1)\n`);
  });
});
