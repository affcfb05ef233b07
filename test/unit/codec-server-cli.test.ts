// `walletflow codec-server` in production: without CODEC_AUTH_TOKEN it would make a token up and
// print it, and a production codec server's output goes to a log (compose's codec-server service),
// so it refuses to start, naming the variable, before it listens.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-run.ts';

describe('walletflow codec-server', () => {
  it('refuses to start in production without CODEC_AUTH_TOKEN, naming it, and prints no token', async () => {
    const result = await runCli(['codec-server', '--port', '0'], {
      env: {
        NODE_ENV: 'production',
        PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        CODEC_AUTH_TOKEN: '',
      },
      timeoutMs: 30_000,
    });
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(/CODEC_AUTH_TOKEN: is required in production/);
    expect(result.stdout).not.toMatch(/bearer token|codec endpoint/);
  });
});
