// .env.example, docker-compose.yml and the configuration (lib/config/), compared name by name: a
// setting offered in .env.example is one walletflow reads and reaches every container that needs
// it (a file setting as a mounted file, not only its name); every name compose reads from .env is
// offered there, with what leaving it out gives; every name compose gives a walletflow container is
// one the configuration reads; every name the configuration reads can be given to a compose
// deployment; and every name the production start checks require is offered and passed on. Compose
// is read as compose reads it (test/support/compose-file.ts), without Docker.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, environmentSchema, loadConfig, requireResolved, secretVariables } from '../../lib/config.ts';
import {
  asMounted,
  compose,
  composeDefault,
  composeText,
  envExample,
  envExampleText,
  filledIn,
  interpolatedNames,
  offeredSettings,
  root,
  startService,
  walletflowServices,
} from '../support/compose-file.ts';

const schemaNames = Object.keys(environmentSchema.shape);
const shape = environmentSchema.shape as Record<
  string,
  { safeParse(value: unknown): { success: boolean; data?: unknown } }
>;
const fileNames = new Set<string>(secretVariables.map((name) => `${name}_FILE`));
/** A name the configuration reads: one of the schema's, or a secret's `_FILE`. */
const readByConfig = (name: string) => schemaNames.includes(name) || fileNames.has(name);

/** The services that run walletflow with its whole configuration (the codec server takes only its own). */
const fullServices = ['api', 'worker', 'worker-next', 'migrate'];

/** Names compose itself uses, not walletflow's configuration: where compose puts them. */
const composeOwn: Record<string, { why: string; services: string[] }> = {
  POSTGRES_PASSWORD: {
    why: 'the postgres image and Temporal take it; compose builds DATABASE_URL from it',
    services: [...fullServices, 'postgres', 'temporal'],
  },
  WALLETFLOW_VERSION: {
    why: 'the image tag of migrate, api and codec-server (a deploy moves it)',
    services: ['migrate', 'api', 'codec-server'],
  },
  WORKER_VERSION: { why: 'the image tag of the worker service (a deploy moves it)', services: ['worker'] },
  WORKER_NEXT_VERSION: { why: 'the image tag of a deploy’s worker-next service', services: ['worker-next'] },
};

/** Where a setting is needed, when not in every service that runs walletflow with its whole configuration. */
const neededBy: Record<string, string[]> = {
  WORKER_MAX_CONCURRENT_ACTIVITIES: ['worker', 'worker-next'],
  // worker-next never promotes (its build waits for `walletflow deploy`).
  WORKER_PROMOTE: ['worker'],
  // The codec server decrypts with the payload keys, behind its own token (docs/payload-encryption.md).
  PAYLOAD_ENCRYPTION_KEYS: [...fullServices, 'codec-server'],
  CODEC_AUTH_TOKEN: ['codec-server'],
  NODE_ENV: [...fullServices, 'codec-server'],
  LOG_LEVEL: [...fullServices, 'codec-server'],
};

/** Names the deployment fixes itself (compose's network shape, its own database, the image): where. */
const fixedByDeployment: Record<string, { why: string; services: string[] } | 'Dockerfile'> = {
  PORT: { why: 'the API listens on 3000, the port compose publishes', services: ['api'] },
  HOST: { why: 'the API listens on every interface of its container', services: ['api'] },
  WORKER_METRICS_PORT: {
    why: 'each worker serves /metrics on 9464 on the compose network',
    services: ['worker', 'worker-next'],
  },
  DATABASE_URL: { why: 'compose’s own PostgreSQL, with POSTGRES_PASSWORD', services: fullServices },
  WORKFLOW_BUNDLE_PATH: 'Dockerfile',
};

/** Names only the process that starts the API sets, with what it hands over: never a deployment's setting. */
const setByStarter: Record<string, string> = {
  LISTEN_FD:
    'the listening socket a test stack hands its API (stack/child-process.ts handOverSocket); compose binds PORT',
};

const offered = offeredSettings(envExampleText);
const offeredNames = new Set(offered.map((setting) => setting.name));

/** Every name compose reads from .env (in any service, image or secret). */
const interpolated = new Set(interpolatedNames(composeText));

/** The names in a ConfigError's problems (`NAME: …`, or `A, B: are required`). */
function startProblemNames(env: Record<string, string>): string[] {
  try {
    requireResolved(loadConfig(env));
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems.flatMap((problem) => problem.split(':')[0]!.split(', '));
  }
}

describe('.env.example, compose and the configuration, name by name', () => {
  it('reads .env.example’s settings, commented ones included, and what compose reads from .env', () => {
    expect(offeredSettings('# A comment\nFOO_BAR=1\n#   BAZ_QUX=2   what it does\n# e.g. NOT_THIS=3\n')).toEqual([
      { name: 'FOO_BAR', value: '1', commented: false },
      { name: 'BAZ_QUX', value: '2', commented: true },
    ]);
    expect(interpolatedNames('a ${A:-x} $$B ${C:?set C} $D')).toEqual(['A', 'C', 'D']);
    expect(composeDefault('${A:-temporal:7233}', 'A')).toBe('temporal:7233');
    expect(offeredNames.has('OPS_API_KEYS')).toBe(true);
  });

  it('offers in .env.example only names walletflow’s configuration reads, or compose’s own', () => {
    const unknown = [...offeredNames].filter((name) => !readByConfig(name) && !(name in composeOwn));
    expect(unknown).toEqual([]);
    for (const name of Object.keys(composeOwn))
      expect(offeredNames.has(name), `${name} (${composeOwn[name]!.why})`).toBe(true);
  });

  it('passes every setting of .env.example on to each container that needs it, under the name the configuration reads', () => {
    const dropped: string[] = [];
    for (const name of offeredNames) {
      const sentinel = `value-of-${name.toLowerCase()}`;
      const services = composeOwn[name]?.services ?? neededBy[name] ?? fullServices;
      for (const service of services) {
        const started = startService(service, { ...envExample, [name]: sentinel });
        const reached =
          name in composeOwn
            ? started.image.includes(sentinel) || Object.values(started.env).some((value) => value.includes(sentinel))
            : fileNames.has(name)
              ? started.mounts.get(started.env[name] ?? '') === sentinel
              : started.env[name] === sentinel;
        if (!reached) dropped.push(`${name} → ${service}`);
      }
    }
    expect(dropped).toEqual([]);
  });

  it('mounts the Temporal TLS files .env names into every container that reaches Temporal, and mounts nothing when none is named', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'walletflow-tls-'));
    const files = {
      ca: path.join(dir, 'ca.pem'),
      cert: path.join(dir, 'client.pem'),
      key: path.join(dir, 'client.key'),
    };
    writeFileSync(files.ca, '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
    writeFileSync(files.cert, '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n');
    writeFileSync(files.key, '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n');
    const dotEnv = {
      ...envExample,
      ...filledIn,
      TEMPORAL_ADDRESS: 'temporal.partner.internal:7233',
      TEMPORAL_TLS_DISABLED: 'false',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.partner.internal',
      TEMPORAL_TLS_CA_FILE: files.ca,
      TEMPORAL_TLS_CERT_FILE: files.cert,
      TEMPORAL_TLS_KEY_FILE: files.key,
    };
    for (const service of fullServices) {
      const started = startService(service, dotEnv);
      // Inside the container the variables name the mounted files, not the host's paths.
      for (const name of ['TEMPORAL_TLS_CA_FILE', 'TEMPORAL_TLS_CERT_FILE', 'TEMPORAL_TLS_KEY_FILE']) {
        expect(started.env[name], `${service} ${name}`).toMatch(/^\/run\/secrets\//);
      }
      const security = loadConfig(asMounted(started)).temporal.security;
      expect(security.tlsDisabled, service).toBe(false);
      expect(security.tls, service).toEqual({
        serverName: 'temporal.partner.internal',
        serverRootCACertificate: Buffer.from(readFileSync(files.ca, 'utf8').trim()),
        clientCertPair: {
          crt: Buffer.from(readFileSync(files.cert, 'utf8').trim()),
          key: Buffer.from(readFileSync(files.key, 'utf8').trim()),
        },
      });
      // None named: what is mounted reads as unset, and the compose Temporal is reached in plaintext.
      const plain = loadConfig(asMounted(startService(service, { ...envExample, ...filledIn }))).temporal.security;
      expect(plain, service).toEqual({ tls: undefined, apiKey: undefined, tlsDisabled: true });
    }
  });

  it('offers in .env.example every name compose reads from .env, showing what leaving it out gives', () => {
    expect([...interpolated].filter((name) => !offeredNames.has(name))).toEqual([]);
    const wrong: string[] = [];
    for (const { name, value } of offered.filter((setting) => setting.commented)) {
      const byCompose = Object.values(compose.services)
        .flatMap((service) => [service.image ?? '', ...Object.values(service.environment ?? {}).map(String)])
        .concat(Object.values(compose.secrets ?? {}).map((secret) => secret.file ?? ''))
        .map((text) => composeDefault(text, name))
        .find((fallback) => fallback !== undefined);
      // Compose's empty default passes the setting empty: walletflow's own default applies.
      if (byCompose !== undefined && byCompose !== '' && !fileNames.has(name)) {
        if (value !== byCompose) wrong.push(`${name}: shows ${value || 'nothing'}, compose gives ${byCompose}`);
        continue;
      }
      if (!schemaNames.includes(name)) continue;
      const absent = shape[name]!.safeParse(undefined);
      const shown = shape[name]!.safeParse(value === '' ? undefined : value);
      const text = (parsed: { data?: unknown }) =>
        JSON.stringify(parsed.data, (_, v: unknown) =>
          typeof v === 'bigint' ? v.toString() : v instanceof Map ? [...v] : v,
        );
      if (!shown.success || text(shown) !== text(absent))
        wrong.push(`${name}: shows ${value || 'nothing'}, the default is ${text(absent)}`);
    }
    // A commented line shows the value walletflow runs with while the line stays commented.
    expect(wrong).toEqual([]);
  });

  it('gives walletflow’s containers only names the configuration reads', () => {
    for (const service of walletflowServices) {
      const names = Object.keys(compose.services[service]?.environment ?? {});
      expect(names.length, service).toBeGreaterThan(1);
      // LD_PRELOAD is read by the dynamic loader: jemalloc (docs/benchmarks.md, Memory).
      expect(
        names.filter((name) => name !== 'LD_PRELOAD' && !readByConfig(name)),
        service,
      ).toEqual([]);
    }
    expect(walletflowServices).toEqual(expect.arrayContaining([...fullServices, 'codec-server']));
    // The sandbox reads its own SANDBOX_* registration (and NODE_ENV), nothing of walletflow's.
    for (const name of Object.keys(compose.services.sandbox?.environment ?? {})) {
      expect(name === 'NODE_ENV' || name.startsWith('SANDBOX_'), `sandbox: ${name}`).toBe(true);
    }
  });

  it('lets a compose deployment give every name the configuration reads: offered in .env.example (itself or as a file), or fixed by the deployment', () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const missing: string[] = [];
    for (const name of schemaNames) {
      const fixed = fixedByDeployment[name];
      if (name in setByStarter) {
        if (offeredNames.has(name)) missing.push(`${name}: offered in .env.example (${setByStarter[name]})`);
      } else if (fixed === 'Dockerfile') {
        if (!new RegExp(`^\\s*(?:ENV\\s+)?${name}=`, 'm').test(dockerfile))
          missing.push(`${name}: not set by the Dockerfile`);
      } else if (fixed) {
        for (const service of fixed.services)
          if (!(name in (compose.services[service]?.environment ?? {}))) missing.push(`${name}: not set in ${service}`);
      } else if (!offeredNames.has(name) && !offeredNames.has(`${name}_FILE`)) {
        missing.push(`${name}: neither it nor ${name}_FILE is in .env.example`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('offers and passes on every name the production start checks require', () => {
    const required = new Set([
      ...startProblemNames({ NODE_ENV: 'production' }),
      // An https address: its proxy too.
      ...startProblemNames({ NODE_ENV: 'production', PUBLIC_URL: 'https://walletflow.partner.example' }),
      // The operator's service: all of its registration.
      ...startProblemNames({ NODE_ENV: 'production', CONNECT_URL: 'https://connect.wallet.example' }),
    ]);
    expect([...required]).toEqual(
      expect.arrayContaining([
        'OPS_API_KEYS',
        'TRUSTED_PROXIES',
        'MERCHANT_P2M_ID',
        'CONNECT_REDIRECT_URI',
        'BATCH_APPROVAL_THRESHOLD',
        'DATABASE_URL',
      ]),
    );
    const notOffered = [...required].filter((name) => !offeredNames.has(name) && !(name in fixedByDeployment));
    expect(notOffered).toEqual([]);
    for (const service of fullServices) {
      const environment = compose.services[service]?.environment ?? {};
      expect(
        [...required].filter((name) => !(name in environment)),
        service,
      ).toEqual([]);
    }
  });
});
