// lib/config.ts: the environment schema names the variable that is wrong and fills defaults.
import * as oidc from 'openid-client';
import { scopesToAsk } from '../../api/console/sign-in.ts';
import { createConsoleGrants } from '../../api/console/console-grants.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, productionProblems, requireResolved } from '../../lib/config.ts';
import { checkConfiguration } from '../../cli/config-check.ts';
import { problemsOf } from '../support/config-problems.ts';
import { retiredOwnerNames } from '../../lib/ops-keys.ts';

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

describe('loadConfig', () => {
  it('fills the defaults and selects the embedded services when nothing is set', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.temporal).toEqual({
      address: undefined,
      namespace: 'default',
      taskQueue: 'walletflow',
      security: { tls: undefined, apiKey: undefined, tlsDisabled: false },
    });
    expect(config.wallet).toBeUndefined();
  });

  it('WORKER_MAX_CONCURRENT_ACTIVITIES: 16 activities at once by default, a count from 1 to 1000, anything else named', () => {
    expect(loadConfig({}).workerMaxConcurrentActivities).toBe(16);
    expect(loadConfig({ WORKER_MAX_CONCURRENT_ACTIVITIES: '64' }).workerMaxConcurrentActivities).toBe(64);
    for (const bad of ['0', '1001', '2.5', 'many']) {
      expect(problemsOf({ WORKER_MAX_CONCURRENT_ACTIVITIES: bad })).toEqual([
        expect.stringMatching(/^WORKER_MAX_CONCURRENT_ACTIVITIES/),
      ]);
    }
  });

  it('SETTLEMENT_TZ: an IANA time zone name, never an offset, which Node and PostgreSQL read as different zones', () => {
    for (const zone of ['Asia/Manila', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT-8', 'EST5EDT', 'US/Eastern'])
      expect(loadConfig({ SETTLEMENT_TZ: zone }).settlementTimeZone).toBe(zone);
    for (const bad of ['+08:00', '+0800', '-05:00', 'UTC+8', 'Mars/Olympus', 'Asia/Manila ', '../etc', 'Z']) {
      expect(problemsOf({ SETTLEMENT_TZ: bad })).toEqual([expect.stringMatching(/^SETTLEMENT_TZ/)]);
    }
  });

  it('reads the wallet service variables, trimming a trailing slash of a base URL', () => {
    const config = loadConfig(wallet);
    expect(config.wallet?.connectUrl).toBe('https://wallet.example/connect');
    expect(config.wallet?.profileVerificationJwk).toEqual({ kty: 'oct', k: 'c2VjcmV0' });
  });

  it('keeps CONNECT_REDIRECT_URI exactly as registered (a trailing slash included)', () => {
    expect(
      loadConfig({ ...wallet, CONNECT_REDIRECT_URI: 'https://partner.example/connect/callback/' }).wallet?.redirectUri,
    ).toBe('https://partner.example/connect/callback/');
  });

  it('keeps CONSOLE_OIDC_ISSUER exactly as the provider names itself (a trailing slash included); sessions record it without', () => {
    const issuer = 'https://auth.example.com/application/o/walletflow/';
    const oidc = loadConfig({
      CONSOLE_OIDC_ISSUER: issuer,
      CONSOLE_OIDC_CLIENT_ID: 'walletflow-console',
      CONSOLE_OIDC_CLIENT_SECRET: 'secret',
      CONSOLE_OIDC_ROLES: 'ops=read',
    }).console.oidc;
    expect(oidc?.issuer).toBe(issuer);
    // A session recorded before the setting was kept as given (without its slash) is still this provider's.
    const grants = createConsoleGrants({ oidc: oidc! }, { fingerprintOf: () => '', keyOfFingerprint: () => undefined });
    expect(grants.ofGroups(['ops'])).toMatchObject({ issuer: 'https://auth.example.com/application/o/walletflow' });
    const session = (recorded: string) => ({
      personId: 'oidc:p',
      scopes: new Set(['read'] as const),
      grant: { via: 'oidc' as const, issuer: recorded, groups: ['ops'] },
    });
    expect(grants.scopesNow(session('https://auth.example.com/application/o/walletflow'))).toEqual(new Set(['read']));
    expect(grants.scopesNow(session('https://other.example.com/application/o/walletflow'))).toBeNull();
  });

  it('asks for CONSOLE_OIDC_SCOPES exactly where set (openid among them), else openid profile and the groups scope a provider lists', () => {
    const oidcEnv = {
      CONSOLE_OIDC_ISSUER: 'https://idp.example',
      CONSOLE_OIDC_CLIENT_ID: 'walletflow-console',
      CONSOLE_OIDC_CLIENT_SECRET: 'secret',
      CONSOLE_OIDC_ROLES: 'ops=read',
    };
    const provider = (scopes: string[]) =>
      new oidc.Configuration({ issuer: 'https://idp.example', scopes_supported: scopes }, 'walletflow-console');
    const lists = provider(['openid', 'profile', 'email', 'groups']);
    expect(scopesToAsk(lists, loadConfig(oidcEnv).console.oidc!)).toBe('openid profile groups');
    expect(scopesToAsk(provider(['openid', 'profile']), loadConfig(oidcEnv).console.oidc!)).toBe('openid profile');
    const set = loadConfig({ ...oidcEnv, CONSOLE_OIDC_SCOPES: 'openid profile openid' }).console.oidc!;
    expect(set.scopes).toEqual(['openid', 'profile']);
    expect(scopesToAsk(lists, set)).toBe('openid profile');
    expect(() => loadConfig({ ...oidcEnv, CONSOLE_OIDC_SCOPES: 'profile groups' })).toThrow(/CONSOLE_OIDC_SCOPES/);
    expect(() => loadConfig({ ...oidcEnv, CONSOLE_OIDC_SCOPES: 'openid  "x"' })).toThrow(/CONSOLE_OIDC_SCOPES/);
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
    expect(
      problems.some((p) => p.startsWith(`${variable}:`)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('reads secrets from NAME_FILE and refuses both forms at once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'walletflow-config-'));
    const keyFile = path.join(dir, 'key');
    const key = Buffer.alloc(32, 7).toString('base64');
    writeFileSync(keyFile, `${key}\n`);
    expect(
      loadConfig({ TOKEN_ENCRYPTION_KEY_FILE: keyFile }).tokenEncryptionKeys?.[0]?.equals(Buffer.alloc(32, 7)),
    ).toBe(true);
    expect(problemsOf({ TOKEN_ENCRYPTION_KEY_FILE: keyFile, TOKEN_ENCRYPTION_KEY: key })[0]).toMatch(
      /^TOKEN_ENCRYPTION_KEY:/,
    );
    expect(problemsOf({ OPS_API_KEYS_FILE: path.join(dir, 'missing') })[0]).toMatch(/^OPS_API_KEYS_FILE: cannot read/);
  });

  it('accepts addresses and CIDR ranges for the session allowlist', () => {
    expect(loadConfig({ SESSION_ALLOWED_IPS: '127.0.0.1, 10.0.0.0/8,::1' }).sessionAllowedIps).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
    ]);
  });

  it('requireResolved names what the API and worker cannot run without', () => {
    expect(() => requireResolved(loadConfig({}))).toThrow(
      /DATABASE_URL[\s\S]*TEMPORAL_ADDRESS[\s\S]*TOKEN_ENCRYPTION_KEY/,
    );
  });

  it('never echoes a secret value in its message', () => {
    try {
      loadConfig({ ...wallet, CONNECT_CLIENT_SECRET: 'super-secret-value', PORT: 'x' });
    } catch (error) {
      expect((error as Error).message).not.toContain('super-secret-value');
    }
  });

  it('refuses weak configuration in production, naming each variable', () => {
    const weak = loadConfig({
      ...wallet,
      NODE_ENV: 'production',
      CONNECT_URL: 'http://127.0.0.1:4010/connect',
      CONNECT_CLIENT_ID: 'sandbox-client-x',
      OPS_API_KEYS: 'short',
      WEBHOOK_RETRY_FOR_MS: '3600000',
    });
    const problems = productionProblems(weak).map((problem) => problem.split(':')[0]);
    expect(problems).toEqual(
      expect.arrayContaining([
        'OPS_API_KEYS',
        'TOKEN_ENCRYPTION_KEY',
        'IDEMPOTENCY_FINGERPRINT_KEY',
        'CONNECT_URL',
        'CONNECT_CLIENT_ID',
        'SESSION_ALLOWED_IPS',
        'PUBLIC_URL',
        'TEMPORAL_TLS',
        'TREASURY_LIMIT',
        'BATCH_APPROVAL_THRESHOLD',
        'WEBHOOK_RETRY_FOR_MS',
      ]),
    );
    const strong = loadConfig(strongProduction);
    expect(productionProblems(strong)).toEqual([]);
    expect(strong.treasuryLimit).toBe(0n);
    expect(loadConfig({ FUNDING_MAX: '2500.50', USER_PER_MINUTE: '3' }).fundingLimits).toMatchObject({
      max: 2_500_500n,
      userPerMinute: 3,
      min: 1_000n,
      timeZone: 'Asia/Manila',
    });
    expect(() => loadConfig({ FUNDING_MIN: '-1' })).toThrow(/FUNDING_MIN/);
    expect(productionProblems(loadConfig({ OPS_API_KEYS: 'short' }))).toEqual([]);
    // Section 13's 24 hours, to the millisecond.
    const retryProblems = (value: string) =>
      productionProblems(loadConfig({ ...strongProduction, WEBHOOK_RETRY_FOR_MS: value })).map(
        (problem) => problem.split(':')[0],
      );
    expect(retryProblems('86399999')).toEqual(['WEBHOOK_RETRY_FOR_MS']);
    expect(retryProblems('86400000')).toEqual([]);
  });

  it.each([
    ['SESSION_ALLOWED_IPS', { SESSION_ALLOWED_IPS: '0.0.0.0/0' }],
    ['SESSION_ALLOWED_IPS', { SESSION_ALLOWED_IPS: '203.0.113.0/28, ::/0' }],
    ['SESSION_ALLOWED_IPS', { SESSION_ALLOWED_IPS: '127.0.0.1' }],
    ['SESSION_ALLOWED_IPS', { SESSION_ALLOWED_IPS: '::ffff:127.0.0.1' }],
    ['SESSION_ALLOWED_IPS', { SESSION_ALLOWED_IPS: '0.0.0.0' }],
    ['CONNECT_URL', { CONNECT_URL: 'http://0.0.0.0:4010/connect' }],
    ['CONNECT_URL', { CONNECT_URL: 'http://[::ffff:127.0.0.1]:4010/connect' }],
    ['OP_URL', { OP_URL: 'http://[::ffff:7f00:1]:4010/op' }],
    ['TRANSFER_URL', { TRANSFER_URL: 'http://127.1.2.3/v1' }],
    ['TRANSFER_URL', { TRANSFER_URL: 'http://[::]/v1' }],
    ['TRANSFER_URL', { TRANSFER_URL: 'http://wallet.localhost/v1' }],
    [
      'PROFILE_VERIFICATION_JWK',
      { PROFILE_VERIFICATION_JWK: JSON.stringify({ kty: 'oct', k: Buffer.alloc(31, 1).toString('base64url') }) },
    ],
    ['LOGIN_SIGNING_KEY', { LOGIN_SIGNING_KEY: 'too-short-a-signing-key' }],
    ['OPS_API_KEYS', { OPS_API_KEYS: `ops:read:${'k'.repeat(40)},robot:fund:short` }],
    // A bare key has no name to audit and every scope (contract-decisions section 12).
    ['OPS_API_KEYS', { OPS_API_KEYS: `ops:read:${'k'.repeat(40)},${'b'.repeat(40)}` }],
    ['TRUSTED_PROXIES', { TRUSTED_PROXIES: '' }],
    ['TRUSTED_PROXIES', { TRUSTED_PROXIES: '0.0.0.0/0' }],
    ['TEMPORAL_TLS', { TEMPORAL_TLS: '' }],
    ['IDEMPOTENCY_FINGERPRINT_KEY', { IDEMPOTENCY_FINGERPRINT_KEY: '' }],
    // Also refused: plaintext wallet URLs, no payload encryption, the sample database password, open metrics.
    ['CONNECT_URL', { CONNECT_URL: 'http://wallet.example/connect/' }],
    ['OP_URL', { OP_URL: 'http://wallet.example/op' }],
    ['TRANSFER_URL', { TRANSFER_URL: 'http://wallet.example/v1' }],
    ['PAYLOAD_ENCRYPTION_KEYS', { PAYLOAD_ENCRYPTION_KEYS: '' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://walletflow:walletflow@postgres:5432/walletflow' }],
    ['METRICS_TOKEN', { METRICS_TOKEN: '' }],
    ['METRICS_TOKEN', { METRICS_TOKEN: 'only-twenty-characters' }],
    ['BATCH_APPROVAL_THRESHOLD', { BATCH_APPROVAL_THRESHOLD: '' }],
    // `walletflow dev`'s: moves runs pinned to other builds onto this one, where their workers may still run.
    ['WORKER_PROMOTE', { WORKER_PROMOTE: 'replace' }],
    // The redirect URI the compose file used to fill in when it was left empty, and others the
    // login's cookie (set on PUBLIC_URL by /connect/start) never reaches.
    ['CONNECT_REDIRECT_URI', { CONNECT_REDIRECT_URI: 'http://localhost:3000/connect/callback' }],
    ['CONNECT_REDIRECT_URI', { CONNECT_REDIRECT_URI: 'http://partner.example/connect/callback' }],
    ['CONNECT_REDIRECT_URI', { CONNECT_REDIRECT_URI: 'https://login.partner.example/connect/callback' }],
    ['CONNECT_REDIRECT_URI', { CONNECT_REDIRECT_URI: 'https://partner.example/connect/callback/' }],
  ])('production refuses %s in %o', (variable, change) => {
    const problems = productionProblems(loadConfig({ ...strongProduction, ...change }));
    expect(problems.map((problem) => problem.split(':')[0])).toContain(variable);
  });

  it('production reaches Temporal over TLS, an mTLS certificate or an API key, or says TEMPORAL_TLS_DISABLED=true', () => {
    const base = { ...strongProduction, TEMPORAL_TLS: '' };
    for (const secured of [
      { TEMPORAL_TLS: 'true' },
      { TEMPORAL_API_KEY: 'cloud-key' },
      { TEMPORAL_TLS_CERT: 'CERT', TEMPORAL_TLS_KEY: 'KEY' },
      { TEMPORAL_TLS_DISABLED: 'true' },
    ]) {
      expect(productionProblems(loadConfig({ ...base, ...secured })), JSON.stringify(secured)).toEqual([]);
    }
    const mtls = loadConfig({
      ...base,
      TEMPORAL_TLS_CERT: 'CERT',
      TEMPORAL_TLS_KEY: 'KEY',
      TEMPORAL_TLS_CA: 'CA',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(mtls.temporal.security.tls).toEqual({
      serverName: 'temporal.internal',
      serverRootCACertificate: Buffer.from('CA'),
      clientCertPair: { crt: Buffer.from('CERT'), key: Buffer.from('KEY') },
    });
    expect(problemsOf({ TEMPORAL_TLS_CERT: 'CERT' })[0]).toMatch(/^TEMPORAL_TLS_CERT:/);
    expect(problemsOf({ TEMPORAL_TLS: 'true', TEMPORAL_TLS_DISABLED: 'true' })[0]).toMatch(/^TEMPORAL_TLS_DISABLED:/);
  });

  it('reads named, scoped ops keys; a bare key is `default` with every scope', () => {
    const keys = loadConfig({ OPS_API_KEYS: `alice:read+resolve:${'a'.repeat(32)}, ${'b'.repeat(32)}` }).opsApiKeys;
    expect(keys.map((key) => [key.name, [...key.scopes]])).toEqual([
      ['alice', ['read', 'resolve']],
      ['default', ['read', 'fund', 'pay', 'resolve', 'accounts', 'admin', 'approve']],
    ]);
    // Names are who audits and approvals say acted: two that differ only in case would be two people to a reader and
    // one to nobody.
    for (const bad of [
      'alice:read',
      'alice:write:key',
      'al ice:read:key',
      `alice:read:${'a'.repeat(32)},alice:fund:${'c'.repeat(32)}`,
      `alice:read:${'a'.repeat(32)},Alice:approve:${'c'.repeat(32)}`,
      `${'b'.repeat(32)},Default:approve:${'c'.repeat(32)}`,
      // A named `default` is a name as any other (found by a read: two keys named so, each acting under it, and one's
      // console sign-out ended the other's session).
      `default:fund:${'a'.repeat(32)},default:approve:${'c'.repeat(32)}`,
      `${'b'.repeat(32)},default:approve:${'c'.repeat(32)}`,
      `default:approve:${'c'.repeat(32)},${'b'.repeat(32)}`,
      'alice::key',
    ]) {
      const problems = problemsOf({ OPS_API_KEYS: bad });
      expect(problems[0], bad).toMatch(/^OPS_API_KEYS:/);
      expect(problems.join(' '), bad).not.toContain('a'.repeat(32));
    }
    // Bare keys (as OPS_API_KEYS held before names) all act as `default`, outside production.
    expect(
      loadConfig({ OPS_API_KEYS: `${'b'.repeat(32)},${'d'.repeat(32)}` }).opsApiKeys.map((key) => key.name),
    ).toEqual(['default', 'default']);
    // A name walletflow records for its own acts is no key's, in any case: a resolve by a key named so read as the
    // sweep's own reconciliation (found by a read).
    for (const name of ['reconciliation', 'Reconciliation', 'unknown'])
      expect(problemsOf({ OPS_API_KEYS: `${name}:resolve:${'k'.repeat(40)}` }), name).toEqual([
        expect.stringMatching(/^OPS_API_KEYS: .*walletflow's own/),
      ]);
    // OPS_KEY_OWNERS: the person each named key acts for; a name that is no key, or an entry not `name=subject`, is
    // refused, naming the variable.
    const owned = `cli:fund+read:${'k'.repeat(40)},approver:approve:${'a'.repeat(40)}`;
    expect(
      loadConfig({ OPS_API_KEYS: owned, OPS_KEY_OWNERS: 'CLI=00u-ana, approver=00u-ana' }).batches.keyOwners,
    ).toEqual(
      new Map([
        ['cli', 'oidc:00u-ana'],
        ['approver', 'oidc:00u-ana'],
      ]),
    );
    expect(loadConfig({ OPS_API_KEYS: owned }).batches.keyOwners).toEqual(new Map());
    // A subject keeps its case (two people may differ only in case); a name that is no key now is kept, for the batches
    // a retired key stored (a rotation drops the key, not its owner), and told apart for a warning.
    const kept = loadConfig({ OPS_API_KEYS: owned, OPS_KEY_OWNERS: 'cli=00u-AbC,retired-cli=00u-AbC' });
    expect(kept.batches.keyOwners.get('cli')).toBe('oidc:00u-AbC');
    expect(retiredOwnerNames(kept.batches.keyOwners, kept.opsApiKeys)).toEqual(['retired-cli']);
    for (const bad of ['cli', 'cli=', 'cli=a b', 'cli=x(y)', 'cli=00u-ana,cli=00u-bo', 'cli=oidc:00u-ana'])
      expect(problemsOf({ OPS_API_KEYS: owned, OPS_KEY_OWNERS: bad }), bad).toEqual([
        expect.stringMatching(/^OPS_KEY_OWNERS: /),
      ]);
  });

  it('reads TOKEN_ENCRYPTION_KEY as a key ring, and the fingerprint key is not derived from it in production', () => {
    const [first, second] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const ring = loadConfig({ TOKEN_ENCRYPTION_KEY: `${first.toString('base64')}, ${second.toString('base64')}` });
    expect(ring.tokenEncryptionKeys).toEqual([first, second]);
    expect(problemsOf({ TOKEN_ENCRYPTION_KEY: `${first.toString('base64')},short` })[0]).toMatch(
      /^TOKEN_ENCRYPTION_KEY: key 2/,
    );
    const own = Buffer.alloc(32, 9);
    expect(
      loadConfig({
        TOKEN_ENCRYPTION_KEY: first.toString('base64'),
        IDEMPOTENCY_FINGERPRINT_KEY: own.toString('base64'),
      }).fingerprintKey,
    ).toEqual(own);
    // Production: none unless given, whatever the token keys.
    expect(loadConfig({ ...strongProduction, IDEMPOTENCY_FINGERPRINT_KEY: '' }).fingerprintKey).toBeUndefined();
    // Development: stable while keys are added in front of the ring (derived from the oldest).
    expect(loadConfig({ TOKEN_ENCRYPTION_KEY: second.toString('base64') }).fingerprintKey).toEqual(ring.fingerprintKey);
  });
});

const strongProduction = {
  ...wallet,
  PROFILE_VERIFICATION_JWK: JSON.stringify({ kty: 'oct', k: Buffer.alloc(32, 3).toString('base64url') }),
  NODE_ENV: 'production',
  OPS_API_KEYS: `ops:read+fund+pay+resolve+accounts+admin:${'k'.repeat(40)},checker:read+approve:${'c'.repeat(40)}`,
  TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
  IDEMPOTENCY_FINGERPRINT_KEY: Buffer.alloc(32, 4).toString('base64'),
  SESSION_ALLOWED_IPS: '203.0.113.0/28',
  PUBLIC_URL: 'https://partner.example',
  TRUSTED_PROXIES: '10.0.0.2',
  TEMPORAL_TLS: 'true',
  TREASURY_LIMIT: '0.00',
  BATCH_APPROVAL_THRESHOLD: '100000.00',
  PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 5).toString('base64')}`,
  METRICS_TOKEN: 'm'.repeat(40),
  DATABASE_URL: 'postgres://walletflow:a-long-generated-password@db.internal:5432/walletflow',
};

describe('walletflow config check', () => {
  const resolved = { ...strongProduction, TEMPORAL_ADDRESS: 'temporal.internal:7233' };
  it('passes a production configuration the API and the worker take, saying the production checks ran', () => {
    expect(checkConfiguration(resolved)).toBe('configuration: ok, the production checks passed');
  });

  it('refuses, before anything changes, what the new build refuses though the previous release took it: a bare ops key', () => {
    expect(() => checkConfiguration({ ...resolved, OPS_API_KEYS: 'k'.repeat(40) })).toThrow(
      /OPS_API_KEYS: entry 1 is a bare key/,
    );
    // Found by a read: the message said "write it as name:scopes:key", and a bare key's acts are recorded as
    // `default`'s, so a batch it stored awaiting approval could be approved by its own holder under the new name.
    expect(() => checkConfiguration({ ...resolved, OPS_API_KEYS: 'k'.repeat(40) })).toThrow(
      /named default \(default:<scopes>:<key>\).*a batch it stored that awaits approval is then still its own/,
    );
    expect(() => checkConfiguration({ ...resolved, TEMPORAL_ADDRESS: undefined })).toThrow(/TEMPORAL_ADDRESS/);
  });

  it('refuses a DATABASE_URL that is no URL, naming it and never its password, as the API, the worker and the CLI start', () => {
    // Found by a read: `openssl rand -base64 24`, the advice for POSTGRES_PASSWORD, gives a "/" four times in ten,
    // and compose pastes the password into DATABASE_URL unencoded. The schema took any text after postgres://, so the
    // production check's own `new URL` threw a TypeError, not a ConfigError: the API and the worker died with the
    // URL, password and all, in the log, and `walletflow migrate` said only "Invalid URL".
    const password = 'Zx9/Qw+k1Lm8';
    const databaseUrl = `postgres://walletflow:${password}@postgres:5432/walletflow`;
    // Each spelling of the class: a "/" first (it parses, the rest read as the database), a "?" or "#" after digits
    // (a port, then a query or a fragment), a stray "%" (no password decodes).
    for (const unencoded of [password, '/Qw+k1Lm8', '123?k1Lm8', '123#k1Lm8', 'ab%zz1Lm8']) {
      const problems = problemsOf({ DATABASE_URL: databaseUrl.replace(password, unencoded) });
      expect(
        problems.filter((problem) => problem.startsWith('DATABASE_URL:')),
        unencoded,
      ).toHaveLength(1);
      expect(problems.join('\n')).not.toContain(unencoded);
    }
    const refusal = (() => {
      try {
        checkConfiguration({ ...resolved, DATABASE_URL: databaseUrl });
      } catch (error) {
        return error as Error;
      }
      return null;
    })();
    expect(refusal?.name).toBe('ConfigError');
    expect(refusal?.message).toMatch(/DATABASE_URL: .*percent-encoded/);
    expect(refusal?.message).not.toContain(password);
    // A password that needs no encoding, and one that is encoded, pass.
    expect(checkConfiguration({ ...resolved, DATABASE_URL: databaseUrl.replace(password, 'a0b1c2d3e4f5') })).toMatch(
      /ok/,
    );
    expect(
      checkConfiguration({ ...resolved, DATABASE_URL: databaseUrl.replace(password, encodeURIComponent(password)) }),
    ).toMatch(/ok/);
  });

  it('refuses what the worker refuses at start besides: a wallet time-out past the executes’ bound, tracing without the traced bundle', () => {
    // Before: only the worker refused them, once the deploy's migrations had run.
    expect(() => checkConfiguration({ ...resolved, WALLET_TIMEOUT_MS: '18001' })).toThrow(/WALLET_TIMEOUT_MS: at most/);
    expect(() =>
      checkConfiguration({
        ...resolved,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.internal:4318',
        WORKFLOW_BUNDLE_PATH: '/nowhere/workflow-bundle.js',
      }),
    ).toThrow(/\/nowhere\/workflow-bundle-traced\.js, the traced bundle/);
  });
});
