// What `walletflow dev` prints: the ops key only when it generated it (a key it was given never
// reaches the terminal), and a login URL minted through the ops API, not a start link naming a user.
import { describe, expect, it } from 'vitest';
import { devSummaryLines, type DevSummary } from '../../cli/dev.ts';

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
    const text = devSummaryLines({ ...base, opsApiKey: { generated: true, key: 'wf_dev_generated-key-0123456789abcdef' } }).join('\n');
    expect(text).toContain('wf_dev_generated-key-0123456789abcdef');
  });

  it('never prints an ops key it was given', () => {
    const given = 'operator-given-key-0123456789abcdef0123';
    const text = devSummaryLines({ ...base, opsApiKey: { generated: false } }).join('\n');
    expect(text).not.toContain(given);
    expect(text).toContain('from OPS_API_KEYS (not printed)');
  });
});
