// The documented `docker compose up` starts: what .env.example and docker-compose.yml give the
// API, the worker and the migrations, with the values a reader is told to fill into .env (the
// comments of .env.example), passes the configuration schema and production's start-up checks
// (lib/config/production-checks.ts) with no problem; and, left as the sandbox demo with
// NODE_ENV=development, the schema. Compose's own interpolation (`${NAME:-default}`,
// `${NAME:?message}`, `$$`) is done here as compose does it, from .env only.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, productionProblems, requireResolved } from '../../lib/config.ts';
import {
  asMounted,
  compose,
  dotenv,
  envExample as example,
  envExampleText,
  filledIn,
  interpolate,
  key,
  root,
  rsaJwk,
  startService,
} from '../support/compose-file.ts';

/**
 * What a walletflow service of compose is started with, given this .env (its secrets' files as mounted), and what
 * compose refuses.
 */
function serviceEnvironment(
  service: string,
  dotEnv: Record<string, string>,
): { env: Record<string, string>; problems: string[] } {
  const started = startService(service, dotEnv);
  return { env: asMounted(started), problems: started.problems };
}

/** Left empty in .env.example on purpose: optional (each comment says what leaving it empty does). */
const optional = [
  'LOGIN_SIGNING_KEY',
  'CODEC_AUTH_TOKEN',
  'CONSOLE_OIDC_ISSUER',
  'CONSOLE_OIDC_CLIENT_ID',
  'CONSOLE_OIDC_CLIENT_SECRET',
  'CONSOLE_OIDC_ROLES',
];

/** The sandbox demo's .env (docker compose --profile sandbox up): its registration, development mode. */
const demo: Record<string, string> = {
  ...example,
  NODE_ENV: 'development',
  CONNECT_CLIENT_SECRET: 'sandbox-client-secret',
  CONNECT_REDIRECT_URI: 'http://localhost:3000/connect/callback',
  TRANSFER_API_KEY: 'sandbox-transfer-api-key',
  MERCHANT_P2M_ID: 'P2M000000001',
  PROFILE_DECRYPTION_JWK: rsaJwk,
  PROFILE_VERIFICATION_JWK: JSON.stringify({ kty: 'oct', k: Buffer.alloc(32, 3).toString('base64url') }),
  OPS_API_KEYS: filledIn.OPS_API_KEYS!,
  TOKEN_ENCRYPTION_KEY: key(1),
  IDEMPOTENCY_FINGERPRINT_KEY: key(2),
  PAYLOAD_ENCRYPTION_KEYS: `k1:${key(5)}`,
  SESSION_ALLOWED_IPS: '172.16.0.0/12',
  PUBLIC_URL: 'http://localhost:3000',
  POSTGRES_PASSWORD: 'a-generated-password-of-24-bytes',
  METRICS_TOKEN: key(9),
};

describe('docker compose with .env.example filled in', () => {
  it('interpolates as compose does', () => {
    const problems: string[] = [];
    expect(interpolate('a${X:-b}c$${Y}${Z-d}${W:-}', { X: '', Z: '' }, problems)).toBe('abc${Y}');
    expect(interpolate('${X:?set X}', {}, problems)).toBe('');
    expect(problems).toEqual(['X: set X']);
    expect(dotenv('# A=1\nB=2\n  C = "3"\nD=\n')).toEqual({ B: '2', C: '3', D: '' });
  });

  it('leaves empty only what a reader fills in or what is optional, and nothing else', () => {
    const empty = Object.keys(example).filter((name) => example[name] === '');
    expect(empty.sort()).toEqual([...Object.keys(filledIn), ...optional].sort());
  });

  it('gives every variable compose requires (`:?`) a line in .env.example', () => {
    const required = new Set<string>();
    for (const service of Object.values(compose.services)) {
      for (const value of Object.values(service.environment ?? {})) {
        for (const match of String(value).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*):?\?/g)) required.add(match[1]!);
      }
    }
    expect([...required].filter((name) => !(name in example))).toEqual([]);
  });

  it.each(['api', 'worker', 'worker-next', 'migrate'])('starts %s in production with no problem', (service) => {
    const { env, problems } = serviceEnvironment(service, { ...example, ...filledIn });
    expect(problems).toEqual([]);
    expect(env.NODE_ENV).toBe('production');
    const config = loadConfig(env);
    expect(productionProblems(config)).toEqual([]);
    expect(() => requireResolved(config)).not.toThrow();
    expect(config.treasuryLimit).toBe(0n);
    expect(config.batches.approvalThreshold).toBe(100_000_000n);
  });

  it('passes WORKER_MAX_CONCURRENT_ACTIVITIES on to the worker', () => {
    expect(
      loadConfig(serviceEnvironment('worker', { ...example, ...filledIn, WORKER_MAX_CONCURRENT_ACTIVITIES: '24' }).env)
        .workerMaxConcurrentActivities,
    ).toBe(24);
    expect(
      loadConfig(serviceEnvironment('worker', { ...example, ...filledIn }).env).workerMaxConcurrentActivities,
    ).toBe(Number(example.WORKER_MAX_CONCURRENT_ACTIVITIES));
  });

  it('stops at compose itself when a required value is left empty, naming it', () => {
    const { problems } = serviceEnvironment('api', {
      ...example,
      ...filledIn,
      TREASURY_LIMIT: '',
      BATCH_APPROVAL_THRESHOLD: '',
    });
    expect(problems.map((problem) => problem.split(':')[0])).toEqual(['TREASURY_LIMIT', 'BATCH_APPROVAL_THRESHOLD']);
  });

  it.each(['api', 'worker', 'worker-next', 'migrate'])(
    'stops %s when MERCHANT_P2M_ID or CONNECT_REDIRECT_URI is left empty: no sample value stands in for the operator’s',
    (service) => {
      const { env, problems } = serviceEnvironment(service, {
        ...example,
        ...filledIn,
        MERCHANT_P2M_ID: '',
        CONNECT_REDIRECT_URI: '',
      });
      expect(problems.map((problem) => problem.split(':')[0]).sort()).toEqual([
        'CONNECT_REDIRECT_URI',
        'MERCHANT_P2M_ID',
      ]);
      expect(env.MERCHANT_P2M_ID).toBe('');
      expect(env.CONNECT_REDIRECT_URI).toBe('');
    },
  );

  it('refuses the sandbox in production, and runs the sandbox demo with NODE_ENV=development', () => {
    const sandboxInProduction = serviceEnvironment('api', { ...demo, NODE_ENV: '' }).env;
    expect(productionProblems(loadConfig(sandboxInProduction)).map((problem) => problem.split(':')[0])).toEqual(
      expect.arrayContaining(['CONNECT_URL', 'CONNECT_CLIENT_ID', 'CONNECT_REDIRECT_URI', 'PUBLIC_URL']),
    );
    for (const service of ['api', 'worker', 'worker-next', 'migrate']) {
      const { env, problems } = serviceEnvironment(service, demo);
      expect(problems, service).toEqual([]);
      const config = loadConfig(env);
      expect(config.nodeEnv).toBe('development');
      expect(() => requireResolved(config), service).not.toThrow();
    }
  });
});

/** Each uncommented setting of .env.example with the comment block above it (settings in a row share one). */
function settingsWithComments(text: string): Array<{ name: string; value: string; comment: string }> {
  const settings: Array<{ name: string; value: string; comment: string }> = [];
  let comment: string[] = [];
  let afterSetting = false;
  for (const line of text.split('\n')) {
    const setting = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (setting) {
      settings.push({ name: setting[1]!, value: setting[2]!, comment: comment.join(' ') });
      afterSetting = true;
    } else if (line.trim() === '' || line.trim() === '#') {
      // A blank line, or an empty comment line between two blocks.
      comment = [];
      afterSetting = false;
    } else if (line.startsWith('#') && !/^#\s*[A-Z][A-Z0-9_]*=/.test(line)) {
      // A comment after settings starts the next block.
      if (afterSetting) comment = [];
      afterSetting = false;
      comment.push(line.replace(/^#\s?/, ''));
    }
  }
  return settings;
}

/**
 * What stops a production start of the API when .env is this: compose's own refusals, the schema's and production's
 * checks, by name.
 */
function refusedNames(dotEnv: Record<string, string>): string[] {
  const { env, problems } = serviceEnvironment('api', dotEnv);
  const names = problems.map((problem) => problem.split(':')[0]!);
  try {
    const config = loadConfig(env);
    names.push(...productionProblems(config).map((problem) => problem.split(':')[0]!));
    requireResolved(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    names.push(...error.problems.flatMap((problem) => problem.split(':')[0]!.split(', ')));
  }
  return names;
}

describe('what .env.example and running-at-scale.md say production needs', () => {
  const empty = settingsWithComments(envExampleText).filter((setting) => setting.value === '');

  it('reads each setting with the comment above it', () => {
    expect(
      settingsWithComments('# header\n#\n# A comment\n# more\nA_B=\nC_D=1\n# next\n# E_F=2\nG_H=\n\nI_J='),
    ).toEqual([
      { name: 'A_B', value: '', comment: 'A comment more' },
      { name: 'C_D', value: '1', comment: 'A comment more' },
      { name: 'G_H', value: '', comment: 'next' },
      { name: 'I_J', value: '', comment: '' },
    ]);
    expect(empty.length).toBeGreaterThan(20);
  });

  it('marks optional exactly the empty settings production starts without: left empty, each other one stops compose or the production start', () => {
    const said = empty.filter((setting) => /\boptional\b/i.test(setting.comment)).map((setting) => setting.name);
    expect([...said].sort()).toEqual([...optional].sort());
    const wrong = empty.flatMap(({ name }) => {
      const refused = refusedNames({ ...example, ...filledIn, [name]: '' }).includes(name);
      return refused === said.includes(name)
        ? [
            `${name}: ${refused ? 'marked optional, but production refuses to start without it' : 'not marked optional, but production starts without it'}`,
          ]
        : [];
    });
    expect(wrong).toEqual([]);
  });

  it('names in running-at-scale.md each setting production needs, and each one left empty as optional', () => {
    const text = readFileSync(path.join(root, 'docs/running-at-scale.md'), 'utf8');
    const secrets = /## Secrets\n([\s\S]*?)\n## /.exec(text)?.[1] ?? '';
    const [needed = '', rest = ''] = secrets.split('Everything else is optional');
    const needs = empty.filter(({ name }) => !optional.includes(name)).map(({ name }) => name);
    expect(needs.filter((name) => !needed.includes(`\`${name}\``))).toEqual([]);
    expect(optional.filter((name) => !rest.includes(`\`${name}\``))).toEqual([]);
  });
});
