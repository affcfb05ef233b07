// lib/config.ts: the environment schema names the variable that is wrong and fills defaults.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, productionProblems, requireResolved } from '../../lib/config.ts';

const rsaJwk = JSON.stringify({ kty: 'RSA', n: 'AQAB', e: 'AQAB', d: 'AQAB' });
const octJwk = JSON.stringify({ kty: 'oct', k: 'c2VjcmV0' });
const wallet = {
  CONNECT_URL: 'https://wallet.example/connect/',
  OP_URL: 'https://wallet.example/op',
  TRANSFER_URL: 'https://wallet.example/v1',
  CONNECT_CLIENT_ID: 'client',
  CONNECT_CLIENT_SECRET: 'secret',
  CONNECT_REDIRECT_URI: 'https://partner.example/connect/callback',
  TRANSFER_API_KEY: 'api-key',
  PROFILE_DECRYPTION_JWK: rsaJwk,
  PROFILE_VERIFICATION_JWK: octJwk,
  MERCHANT_P2M_ID: 'p2m-1',
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills the defaults and selects the embedded services when nothing is set', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.temporal).toEqual({ address: undefined, namespace: 'default', taskQueue: 'walletflow' });
    expect(config.wallet).toBeUndefined();
  });

  it('reads the wallet service variables, trimming a trailing slash of a base URL', () => {
    const config = loadConfig(wallet);
    expect(config.wallet?.connectUrl).toBe('https://wallet.example/connect');
    expect(config.wallet?.profileVerificationJwk).toEqual({ kty: 'oct', k: 'c2VjcmV0' });
  });

  it('keeps CONNECT_REDIRECT_URI exactly as registered (a trailing slash included)', () => {
    expect(loadConfig({ ...wallet, CONNECT_REDIRECT_URI: 'https://partner.example/connect/callback/' }).wallet?.redirectUri).toBe(
      'https://partner.example/connect/callback/',
    );
  });

  it('uses the built-in sandbox when none of the three URLs is set, whatever else is', () => {
    expect(loadConfig({ MERCHANT_P2M_ID: 'p2m-1', CONNECT_CLIENT_ID: 'client' }).wallet).toBeUndefined();
  });

  it('names every wallet variable missing when only some are set', () => {
    const problems = problemsOf({ CONNECT_URL: 'https://wallet.example/connect' });
    expect(problems.some((p) => p.startsWith('OP_URL:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('TRANSFER_API_KEY:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('CONNECT_URL:'))).toBe(false);
  });

  it.each([
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ TEMPORAL_ADDRESS: 'no-port' }, 'TEMPORAL_ADDRESS'],
    [{ TOKEN_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') }, 'TOKEN_ENCRYPTION_KEY'],
    [{ SESSION_ALLOWED_IPS: '10.0.0.1, 300.1.1.1' }, 'SESSION_ALLOWED_IPS'],
    [{ ...wallet, PROFILE_DECRYPTION_JWK: '{not json' }, 'PROFILE_DECRYPTION_JWK'],
    [{ ...wallet, PROFILE_DECRYPTION_JWK: JSON.stringify({ kty: 'RSA', n: 'a', e: 'b' }) }, 'PROFILE_DECRYPTION_JWK'],
    [{ ...wallet, CONNECT_URL: 'ftp://x' }, 'CONNECT_URL'],
  ])('refuses %o naming %s', (env, variable) => {
    const problems = problemsOf(env as Record<string, string>);
    expect(problems.some((p) => p.startsWith(`${variable}:`)), problems.join('\n')).toBe(true);
  });

  it('reads secrets from NAME_FILE and refuses both forms at once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'walletflow-config-'));
    const keyFile = path.join(dir, 'key');
    const key = Buffer.alloc(32, 7).toString('base64');
    writeFileSync(keyFile, `${key}\n`);
    expect(loadConfig({ TOKEN_ENCRYPTION_KEY_FILE: keyFile }).tokenEncryptionKey?.equals(Buffer.alloc(32, 7))).toBe(true);
    expect(problemsOf({ TOKEN_ENCRYPTION_KEY_FILE: keyFile, TOKEN_ENCRYPTION_KEY: key })[0]).toMatch(/^TOKEN_ENCRYPTION_KEY:/);
    expect(problemsOf({ OPS_API_KEYS_FILE: path.join(dir, 'missing') })[0]).toMatch(/^OPS_API_KEYS_FILE: cannot read/);
  });

  it('accepts addresses and CIDR ranges for the session allowlist', () => {
    expect(loadConfig({ SESSION_ALLOWED_IPS: '127.0.0.1, 10.0.0.0/8,::1' }).sessionAllowedIps).toEqual(['127.0.0.1', '10.0.0.0/8', '::1']);
  });

  it('requireResolved names what the API and worker cannot run without', () => {
    expect(() => requireResolved(loadConfig({}))).toThrow(/DATABASE_URL[\s\S]*TEMPORAL_ADDRESS[\s\S]*TOKEN_ENCRYPTION_KEY/);
  });

  it('never echoes a secret value in its message', () => {
    try {
      loadConfig({ ...wallet, CONNECT_CLIENT_SECRET: 'super-secret-value', PORT: 'x' });
    } catch (error) {
      expect((error as Error).message).not.toContain('super-secret-value');
    }
  });

  it('refuses weak configuration in production, naming each variable', () => {
    const weak = loadConfig({ ...wallet, NODE_ENV: 'production', CONNECT_URL: 'http://127.0.0.1:4010/connect', CONNECT_CLIENT_ID: 'sandbox-client-x', OPS_API_KEYS: 'short' });
    const problems = productionProblems(weak).map((problem) => problem.split(':')[0]);
    expect(problems).toEqual(
      expect.arrayContaining(['OPS_API_KEYS', 'TOKEN_ENCRYPTION_KEY', 'CONNECT_URL', 'CONNECT_CLIENT_ID', 'SESSION_ALLOWED_IPS', 'PUBLIC_URL', 'TREASURY_LIMIT']),
    );
    const strong = loadConfig({
      ...wallet,
      NODE_ENV: 'production',
      OPS_API_KEYS: 'k'.repeat(40),
      TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      SESSION_ALLOWED_IPS: '203.0.113.0/28',
      PUBLIC_URL: 'https://partner.example',
      TREASURY_LIMIT: '0.00',
    });
    expect(productionProblems(strong)).toEqual([]);
    expect(strong.treasuryLimit).toBe(0n);
    expect(loadConfig({ FUNDING_MAX: '2500.50', USER_PER_MINUTE: '3' }).fundingLimits).toMatchObject({ max: 2_500_500n, userPerMinute: 3, min: 1_000n, timeZone: 'Asia/Manila' });
    expect(() => loadConfig({ FUNDING_MIN: '-1' })).toThrow(/FUNDING_MIN/);
    expect(productionProblems(loadConfig({ OPS_API_KEYS: 'short' }))).toEqual([]);
  });
});
