// What `walletflow dev` prints: the ops key only when it generated it (a key it was given never
// reaches the terminal), a login URL minted through the ops API, not a start link naming a user,
// the partner ledger it seeded (the treasury's float, each test user's partner balance), and the
// batch approval threshold its maker-checker demo runs with.
import { describe, expect, it } from 'vitest';
import { DEMO_BATCH_APPROVAL_THRESHOLD, devSummaryLines, type DevSummary } from '../../cli/dev.ts';
import type { RunningSandbox } from '../../sandbox/server.ts';

const base: DevSummary = {
  apiBase: 'http://127.0.0.1:3000',
  temporalUi: undefined,
  sandbox: undefined,
  users: [],
  demoLinkId: undefined,
  opsApiKey: { generated: false },
  workerMetrics: undefined,
};

describe('walletflow dev summary', () => {
  it('prints a generated ops key', () => {
    const text = devSummaryLines({
      ...base,
      opsApiKey: { generated: true, key: 'wf_dev_generated-key-0123456789abcdef' },
    }).join('\n');
    expect(text).toContain('wf_dev_generated-key-0123456789abcdef');
  });

  it('never prints an ops key it was given', () => {
    const given = 'operator-given-key-0123456789abcdef0123';
    const text = devSummaryLines({ ...base, opsApiKey: { generated: false } }).join('\n');
    expect(text).not.toContain(given);
    expect(text).toContain('from OPS_API_KEYS (not printed)');
  });

  it('shows the treasury’s float and each test user’s partner balance it seeded', () => {
    const sandbox = {
      url: 'http://127.0.0.1:4010',
      connectUrl: 'http://127.0.0.1:4010/connect',
      partner: { clientId: 'c', redirectUri: 'http://127.0.0.1:3000/connect/callback' },
    } as unknown as RunningSandbox;
    const ana = {
      userId: '6f1c0d9e-0000-4000-8000-000000000001',
      profileId: '512345678901',
      mobile: '09171234567',
      password: 'sandbox-pass',
      kycLevel: 'KYC1' as const,
      balance: '5000.00',
      name: 'Ana Reyes',
      partnerUserId: 'wallet:512345678901',
      partnerBalance: '2500.00',
    };
    const text = devSummaryLines({
      ...base,
      sandbox,
      users: [ana],
      balances: { treasury: '97500.00', users: new Map([['wallet:512345678901', '2500.00']]) },
    }).join('\n');
    expect(text).toMatch(/treasury 97500\.00 PHP available \(float 100000\.00 from CAPITAL\)/);
    expect(text).toMatch(/Ana Reyes +partner balance +2500\.00 PHP +\(wallet:512345678901\)/);
    expect(text).toContain('/_sandbox/launcher');
    // Not seeded (a real wallet service, or the seeding failed): no ledger lines.
    expect(devSummaryLines({ ...base, sandbox, users: [ana] }).join('\n')).not.toContain('partner ledger');
  });

  it('prints the batch approval threshold, and that the sample batch waits for the checker', () => {
    const sandbox = {
      url: 'http://127.0.0.1:4010',
      connectUrl: 'http://127.0.0.1:4010/connect',
      partner: { clientId: 'c', redirectUri: 'http://127.0.0.1:3000/connect/callback' },
    } as unknown as RunningSandbox;
    const demo: DevSummary = {
      ...base,
      sandbox,
      console: { kind: 'sandbox', issuer: 'http://127.0.0.1:4020' },
      batchApproval: { threshold: DEMO_BATCH_APPROVAL_THRESHOLD, given: false },
      sampleBatch: { file: '.walletflow/sample-batch.csv', items: 300, total: '300.00' },
    };
    const text = devSummaryLines(demo).join('\n');
    expect(text).toContain(
      `batch approval   a batch of ${DEMO_BATCH_APPROVAL_THRESHOLD} PHP or more waits for another person's approval (BATCH_APPROVAL_THRESHOLD, set for this demo): upload one as maker, approve it as checker`,
    );
    expect(text).toMatch(
      /batches create --file \.walletflow\/sample-batch\.csv .*\(300 items, 300\.00 PHP; codes valid 30 minutes\)/,
    );
    expect(text).toContain(
      '300.00 PHP is at or above the approval threshold: the batch waits until another person approves it (in the console, as checker)',
    );
    // The README's walk-through needs the sample batch to wait: the demo's threshold is under its total.
    expect(Number(DEMO_BATCH_APPROVAL_THRESHOLD)).toBeLessThanOrEqual(300);
    // A threshold of the operator's own, above the sample: said so, and the sample runs at once.
    const theirs = devSummaryLines({ ...demo, batchApproval: { threshold: '100000.00', given: true } }).join('\n');
    expect(theirs).toContain(
      "a batch of 100000.00 PHP or more waits for another person's approval (BATCH_APPROVAL_THRESHOLD, yours)",
    );
    expect(theirs).not.toContain('is at or above the approval threshold');
  });

  it('says how to open the ops console and sign in: the sandbox identity provider’s staff, the partner’s provider, or an ops key', () => {
    const sandboxSignIn = devSummaryLines({
      ...base,
      console: { kind: 'sandbox', issuer: 'http://127.0.0.1:4020' },
    }).join('\n');
    expect(sandboxSignIn).toContain('ops console      http://127.0.0.1:3000/console');
    for (const username of ['maker', 'checker', 'reader', 'admin'])
      expect(sandboxSignIn).toMatch(new RegExp(`${username} +password sandbox-pass`));
    expect(
      devSummaryLines({ ...base, console: { kind: 'yours', issuer: 'https://login.partner.example' } }).join('\n'),
    ).toContain('sign in through https://login.partner.example');
    expect(devSummaryLines({ ...base, console: { kind: 'key' } }).join('\n')).toContain('sign in with an ops key');
  });
});
