// The one place configuration is read: a zod schema over the environment (names fixed by
// contract-decisions section 1). A bad or missing value stops start-up with a message naming the
// variable. Secrets may come from files through the same name with `_FILE` appended.
import { hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import { parsePayloadKeys, type PayloadKey } from './payload-codec.ts';
import { OpsKeyError, parseOpsKeys, type OpsKey } from './ops-keys.ts';
import {
  profileDecryptionJwkSchema,
  profileVerificationJwkSchema,
  type ProfileDecryptionJwk,
  type ProfileVerificationJwk,
} from '../domain/jwk.ts';

/** Variables that may be given as `NAME_FILE` (a path whose contents are the value). */
export const secretVariables = [
  'CONNECT_CLIENT_SECRET',
  'TRANSFER_API_KEY',
  'PROFILE_DECRYPTION_JWK',
  'PROFILE_VERIFICATION_JWK',
  'OPS_API_KEYS',
  'TOKEN_ENCRYPTION_KEY',
  'IDEMPOTENCY_FINGERPRINT_KEY',
  'LOGIN_SIGNING_KEY',
  'DATABASE_URL',
  'PAYLOAD_ENCRYPTION_KEYS',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS_KEY',
  'CODEC_AUTH_TOKEN',
  'METRICS_TOKEN',
  // Headers to the trace collector: often an API key (`authorization=Bearer …`).
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  // Not secrets, but PEM files like the key beside them.
  'TEMPORAL_TLS_CERT',
  'TEMPORAL_TLS_CA',
] as const;

/**
 * The wallet service's base URLs: when none is set, the built-in sandbox is used (and the other
 * wallet variables below are not read); when any is set, every wallet variable is required
 * (contract-decisions section 1).
 */
export const walletUrlVariables = ['CONNECT_URL', 'OP_URL', 'TRANSFER_URL'] as const;

/** The wallet service variables: all of them when a wallet URL is set. */
export const walletServiceVariables = [
  ...walletUrlVariables,
  'CONNECT_CLIENT_ID',
  'CONNECT_CLIENT_SECRET',
  'CONNECT_REDIRECT_URI',
  'TRANSFER_API_KEY',
  'PROFILE_DECRYPTION_JWK',
  'PROFILE_VERIFICATION_JWK',
  'MERCHANT_P2M_ID',
] as const;

const emptyAsUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());

const httpUrlText = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** A base URL: paths are appended to it, so a trailing slash is dropped. */
const httpUrl = z.preprocess(emptyAsUndefined, httpUrlText.transform((value) => value.replace(/\/+$/, '')).optional());

/** The redirect URI must match the registered one exactly (interface): kept as given. */
const exactHttpUrl = z.preprocess(emptyAsUndefined, httpUrlText.optional());

const postgresUrl = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .refine((value) => /^postgres(ql)?:\/\/.+/.test(value), 'must be a postgres:// or postgresql:// URL')
    .optional(),
);

/** A JWK given as JSON text, validated by `schema`. */
const jwkJson = <T extends z.ZodType>(schema: T) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((text, ctx) => {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be a JWK in JSON' });
          return z.NEVER;
        }
      })
      .pipe(schema)
      .optional(),
  );

const commaList = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item.length > 0),
    )
    .optional(),
);

/** An IPv4/IPv6 address or CIDR range. */
export function isAddressOrCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split('/');
  if (rest.length > 0 || !address) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

const decodeKey32 = (value: string): Buffer | undefined => {
  const key = Buffer.from(value, 'base64');
  return key.length === 32 && key.toString('base64').replace(/=+$/, '') === value.trim().replace(/=+$/, '') ? key : undefined;
};

const base64Key = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value, ctx) => {
      const key = decodeKey32(value);
      if (!key) {
        ctx.addIssue({ code: 'custom', message: 'must be 32 bytes in base64 (openssl rand -base64 32)' });
        return z.NEVER;
      }
      return key;
    })
    .optional(),
);

/** A key ring: comma-separated 32-byte base64 keys; the first encrypts, every one decrypts. */
const base64KeyRing = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value, ctx) => {
      const keys = value.split(',').map((item) => decodeKey32(item.trim()));
      const position = keys.findIndex((key) => !key);
      if (position >= 0) {
        ctx.addIssue({ code: 'custom', message: `key ${position + 1}: every key must be 32 bytes in base64 (openssl rand -base64 32), comma-separated, the newest first` });
        return z.NEVER;
      }
      return keys as Buffer[];
    })
    .optional(),
);

const booleanFlag = z.preprocess(emptyAsUndefined, z.enum(['true', 'false'], { error: 'must be true or false' }).optional()).transform((value) => value === 'true');

const portNumber = (fallback: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ error: 'must be a port number' })
      .int('must be a port number')
      .min(0, 'must be a port number')
      .max(65535, 'must be a port number')
      .default(fallback),
  );

/** A PHP amount in configuration ("50000.00"): thousandths. */
const configAmount = (fallback: string | undefined) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^(0|[1-9]\d{0,12})(\.\d{1,2})?$/, 'must be a decimal amount such as "50000.00"')
      .transform((value) => {
        const [whole = '0', fraction = ''] = value.split('.');
        return BigInt(whole) * 1000n + BigInt(fraction.padEnd(3, '0'));
      })
      .optional()
      .transform((value) => value ?? (fallback === undefined ? undefined : BigInt(fallback))),
  );

const timeZone = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .refine((zone) => {
      try {
        new Intl.DateTimeFormat('en', { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    }, 'must be an IANA time zone such as Asia/Manila')
    .default('Asia/Manila'),
);

/**
 * OTLP headers (the OpenTelemetry specification's format): `key=value` pairs, comma-separated,
 * values percent-encoded. The values are secrets (an API key): an error names the entry, never it.
 */
const otlpHeaders = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value, ctx) => {
      const headers: Record<string, string> = {};
      for (const [position, entry] of value.split(',').entries()) {
        if (entry.trim() === '') continue;
        const equals = entry.indexOf('=');
        const key = entry.slice(0, Math.max(0, equals)).trim();
        let decoded: string | undefined;
        try {
          decoded = decodeURIComponent(entry.slice(equals + 1).trim());
        } catch {
          decoded = undefined;
        }
        if (equals <= 0 || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key) || decoded === undefined || decoded === '') {
          ctx.addIssue({ code: 'custom', message: `entry ${position + 1}: must be key=value pairs, comma-separated (values percent-encoded)` });
          return z.NEVER;
        }
        headers[key.toLowerCase()] = decoded;
      }
      return headers;
    })
    .optional(),
);

/** Requests per client address per minute at the public routes (see AppConfig.rateLimits). */
export const defaultRateLimits = { publicPerMinute: 600, sessionPerMinute: 6000, webSessionPollsPerMinute: 240 } as const;

export const environmentSchema = z
  .object({
    NODE_ENV: z.preprocess(emptyAsUndefined, z.enum(['development', 'test', 'production']).default('development')),
    PORT: portNumber(3000),
    HOST: z.preprocess(emptyAsUndefined, z.string().default('127.0.0.1')),
    PUBLIC_URL: httpUrl,
    LOG_LEVEL: z.preprocess(emptyAsUndefined, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
    LOG_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['json', 'pretty']).default('json')),
    WORKER_METRICS_PORT: portNumber(9464),
    WORKER_MAX_CONCURRENT_ACTIVITIES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1000).default(16)),

    DATABASE_URL: postgresUrl,

    TEMPORAL_ADDRESS: z.preprocess(
      emptyAsUndefined,
      z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port').optional(),
    ),
    TEMPORAL_NAMESPACE: z.preprocess(emptyAsUndefined, z.string().min(1).default('default')),
    TEMPORAL_TASK_QUEUE: z.preprocess(emptyAsUndefined, z.string().min(1).default('walletflow')),
    TEMPORAL_TLS: booleanFlag,
    TEMPORAL_TLS_CA: optionalString,
    TEMPORAL_TLS_CERT: optionalString,
    TEMPORAL_TLS_KEY: optionalString,
    TEMPORAL_TLS_SERVER_NAME: optionalString,
    TEMPORAL_API_KEY: optionalString,
    TEMPORAL_TLS_DISABLED: booleanFlag,
    CODEC_AUTH_TOKEN: z.preprocess(emptyAsUndefined, z.string().regex(/^[\x21-\x7e]{16,512}$/, 'must be 16 to 512 printable characters').optional()),
    METRICS_TOKEN: z.preprocess(emptyAsUndefined, z.string().regex(/^[\x21-\x7e]{16,512}$/, 'must be 16 to 512 printable characters').optional()),
    WORKFLOW_BUNDLE_PATH: optionalString,
    PAYLOAD_ENCRYPTION_KEYS: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .transform((value, ctx) => {
          try {
            return parsePayloadKeys(value);
          } catch (error) {
            ctx.addIssue({ code: 'custom', message: (error as Error).message });
            return z.NEVER;
          }
        })
        .optional(),
    ),
    RECONCILE_EVERY_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1440).default(5)),
    RECONCILE_AFTER_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(60).max(604_800).default(900)),
    // Webhooks (contract-decisions section 13): how often the deliverer looks for due deliveries,
    // and the retry schedule (first delay doubling up to the cap, for the window: 24 hours by default).
    WEBHOOK_POLL_INTERVAL_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(50).max(60_000).default(1000)),
    WEBHOOK_RETRY_BASE_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(10).max(3_600_000).default(30_000)),
    WEBHOOK_RETRY_MAX_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(10).max(86_400_000).default(3_600_000)),
    WEBHOOK_RETRY_FOR_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(100).max(2_592_000_000).default(86_400_000)),
    PURGE_EVERY_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1440).default(60)),
    PURGE_RETENTION_HOURS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(8760).default(24)),

    CONNECT_URL: httpUrl,
    OP_URL: httpUrl,
    TRANSFER_URL: httpUrl,
    CONNECT_CLIENT_ID: optionalString,
    CONNECT_CLIENT_SECRET: optionalString,
    CONNECT_REDIRECT_URI: exactHttpUrl,
    TRANSFER_API_KEY: optionalString,
    PROFILE_DECRYPTION_JWK: jwkJson(profileDecryptionJwkSchema),
    PROFILE_VERIFICATION_JWK: jwkJson(profileVerificationJwkSchema),
    MERCHANT_P2M_ID: optionalString,
    CONNECT_RETURN_URL: httpUrl,
    WALLET_TIMEOUT_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(100).max(120_000).default(10_000)),

    SESSION_ALLOWED_IPS: commaList.pipe(
      z
        .array(z.string().refine(isAddressOrCidr, 'each entry must be an IP address or CIDR range'))
        .optional(),
    ),
    TRUSTED_PROXIES: commaList.pipe(
      z.array(z.string().refine(isAddressOrCidr, 'each entry must be an IP address or CIDR range')).optional(),
    ),
    OPS_API_KEYS: commaList.transform((entries, ctx) => {
      try {
        return parseOpsKeys(entries ?? []);
      } catch (error) {
        if (!(error instanceof OpsKeyError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.message });
        return z.NEVER;
      }
    }),
    TOKEN_ENCRYPTION_KEY: base64KeyRing,
    IDEMPOTENCY_FINGERPRINT_KEY: base64Key,
    LOGIN_SIGNING_KEY: optionalString,
    EMBEDDED_SESSION_TTL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(10).max(3600).default(120)),
    WEB_SESSION_TTL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(60).max(86_400).default(1200)),
    PUBLIC_RATE_LIMIT_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.publicPerMinute)),
    SESSION_RATE_LIMIT_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.sessionPerMinute)),
    WEB_SESSION_POLL_LIMIT_PER_MINUTE: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.webSessionPollsPerMinute),
    ),

    // Money authority (contract-decisions section 10): amounts in PHP, as decimal strings.
    TREASURY_LIMIT: configAmount(undefined),
    FUNDING_MIN: configAmount('1000'),
    FUNDING_MAX: configAmount('50000000'),
    USER_DAILY_AMOUNT: configAmount('100000000'),
    USER_DAILY_COUNT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(20)),
    USER_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(5)),
    SETTLEMENT_TZ: timeZone,

    // Tracing (OpenTelemetry's standard names): off unless a collector endpoint is given.
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: exactHttpUrl,
    OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders,
    OTEL_SERVICE_NAME: z.preprocess(emptyAsUndefined, z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable characters').optional()),
    OTEL_TRACES_EXPORTER: z.preprocess(emptyAsUndefined, z.enum(['otlp', 'none'], { error: 'must be otlp or none (the only exporters walletflow ships)' }).optional()),
    OTEL_SDK_DISABLED: booleanFlag,
  })
  .superRefine((env, ctx) => {
    if (env.TEMPORAL_TLS_DISABLED && (env.TEMPORAL_TLS || env.TEMPORAL_TLS_CA || env.TEMPORAL_TLS_CERT || env.TEMPORAL_TLS_KEY || env.TEMPORAL_API_KEY)) {
      ctx.addIssue({ code: 'custom', path: ['TEMPORAL_TLS_DISABLED'], message: 'is true while TLS settings are given: choose one' });
    }
    if ((env.TEMPORAL_TLS_CERT === undefined) !== (env.TEMPORAL_TLS_KEY === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['TEMPORAL_TLS_CERT'], message: 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (the mTLS client certificate and its key) go together' });
    }
    const urls = walletUrlVariables.filter((name) => env[name] !== undefined);
    if (urls.length > 0) {
      for (const name of walletServiceVariables) {
        if (env[name] === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: `is required when ${urls.join(', ')} ${urls.length === 1 ? 'is' : 'are'} set (set all wallet service variables, or none of the three URLs for the built-in sandbox)`,
          });
        }
      }
    }
  });

export type Environment = z.infer<typeof environmentSchema>;

export interface WalletServiceConfig {
  connectUrl: string;
  opUrl: string;
  transferUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  transferApiKey: string;
  profileDecryptionJwk: ProfileDecryptionJwk;
  profileVerificationJwk: ProfileVerificationJwk;
  p2mId: string;
  timeoutMs: number;
}

export interface AppConfig {
  nodeEnv: Environment['NODE_ENV'];
  port: number;
  host: string;
  publicUrl: string | undefined;
  logLevel: Environment['LOG_LEVEL'];
  /** `json` (one JSON object a line) or `pretty` (for a terminal: `walletflow dev`). */
  logFormat: Environment['LOG_FORMAT'];
  /** Where the worker serves GET /metrics (on HOST), its own series and the Temporal SDK's; 0: off. */
  workerMetricsPort: number;
  /**
   * Activities one worker runs at once (the SDK's default is 100). Beyond the database pool and a few
   * wallet calls in flight they only wait inside the process, holding memory (docs/benchmarks.md).
   */
  workerMaxConcurrentActivities: number;
  /** Absent: the embedded PostgreSQL (started by `walletflow dev` and the test setup). */
  databaseUrl: string | undefined;
  temporal: { address: string | undefined; namespace: string; taskQueue: string; security: TemporalSecurity };
  /** A prebuilt workflow bundle for the worker (production); absent: bundled from source at start. */
  workflowBundlePath: string | undefined;
  /** Temporal payload encryption keys (the first encrypts); absent: payloads are not encrypted. */
  payloadKeys: PayloadKey[] | undefined;
  /** The reconciliation sweep: how often, and how old a non-final funding must be to be looked at. */
  reconcile: { everyMinutes: number; olderThanSeconds: number };
  /** The webhook deliverer: its poll interval and retry schedule (defaults: 1 s; 30 s doubling to 1 h, for 24 h). */
  webhooks: { pollIntervalMs: number; retry: { baseDelayMs: number; maxDelayMs: number; retryForMs: number } };
  /** The purge of expired logins and sessions: how often, and how long past expiry a row is kept. */
  purge: { everyMinutes: number; retentionSeconds: number };
  /** Absent: the built-in sandbox. */
  wallet: WalletServiceConfig | undefined;
  walletTimeoutMs: number;
  /** Where /connect/callback sends the user after linking; absent: a success page. */
  connectReturnUrl: string | undefined;
  sessionAllowedIps: string[];
  trustedProxies: string[];
  /** OPS_API_KEYS: named, scoped keys (a bare key is `default` with every scope). */
  opsApiKeys: OpsKey[];
  /** TOKEN_ENCRYPTION_KEY as a key ring: the first encrypts, every one decrypts. */
  tokenEncryptionKeys: Buffer[] | undefined;
  /** The HMAC key of idempotency fingerprints: IDEMPOTENCY_FINGERPRINT_KEY, never a token key in production. */
  fingerprintKey: Buffer | undefined;
  /** LOGIN_SIGNING_KEY: verifies partner-signed login tokens (HS256); absent: only ops login URLs. */
  loginSigningKey: Buffer | undefined;
  /** CODEC_AUTH_TOKEN: the bearer token of `walletflow codec-server`; absent: one per run. */
  codecAuthToken: string | undefined;
  /**
   * METRICS_TOKEN: the bearer token GET /metrics needs on the API (its gauges tell the business's
   * volumes); absent (development only): /metrics is open. Required in production (issue 26 #5).
   */
  metricsToken: string | undefined;
  /** How long a session id from the session URL may be used at the landing page. */
  embeddedSessionTtlSeconds: number;
  /** How long the partner's web session (cookie) in the wallet app's web view lasts. */
  webSessionTtlSeconds: number;
  /**
   * Requests per client address per minute: `publicPerMinute` for the landing page and connect
   * routes (each its own count), `sessionPerMinute` for the session URL, whose callers are the
   * wallet service's few sender addresses carrying every user's tile opening.
   */
  rateLimits: { publicPerMinute: number; sessionPerMinute: number; webSessionPollsPerMinute: number };
  /** Section 10: how far the treasury may go below zero (thousandths); undefined: no limit (refused in production). */
  treasuryLimit: bigint | undefined;
  /** Section 10's funding limits (thousandths and counts) and the day they count in (SETTLEMENT_TZ). */
  fundingLimits: { min: bigint; max: bigint; userDailyAmount: bigint; userDailyCount: number; userPerMinute: number; timeZone: string };
  /** The day of GET /ops/settlements/{date} and of the daily limits. */
  settlementTimeZone: string;
  /** OpenTelemetry traces to an OTLP/HTTP collector; absent: off (nothing of OpenTelemetry is loaded). */
  tracing: TracingConfig | undefined;
}

/**
 * Where spans go: `url` is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else
 * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` (the specification's rule); `headers` go with every
 * export (secrets: never logged); `serviceName` is OTEL_SERVICE_NAME (absent: `walletflow-api`,
 * `walletflow-worker`).
 */
export interface TracingConfig {
  url: string;
  headers: Record<string, string>;
  serviceName: string | undefined;
}

/**
 * How walletflow reaches Temporal: TLS (system roots, or TEMPORAL_TLS_CA), an mTLS client
 * certificate, an API key (Temporal Cloud), or plaintext; `tlsDisabled` is production's explicit
 * opt-out (TEMPORAL_TLS_DISABLED=true).
 */
export interface TemporalSecurity {
  tls: { serverName?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } } | undefined;
  apiKey: string | undefined;
  tlsDisabled: boolean;
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Replaces every `NAME_FILE` with the contents of that file as `NAME`. */
function resolveSecretFiles(env: Env): { env: Env; problems: string[] } {
  const resolved: Env = { ...env };
  const problems: string[] = [];
  for (const name of secretVariables) {
    const filePath = env[`${name}_FILE`];
    if (!filePath) continue;
    if (env[name]) {
      problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      resolved[name] = readFileSync(filePath, 'utf8').trim();
    } catch (error) {
      problems.push(`${name}_FILE: cannot read ${filePath} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return { env: resolved, problems };
}

/** The development fallback of the fingerprint key (what every version before the key ring used). */
function deriveFingerprintKey(tokenKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', tokenKey, Buffer.alloc(0), 'walletflow:funding-fingerprint', 32));
}

function temporalSecurity(e: Environment): TemporalSecurity {
  const pem = (text: string) => Buffer.from(text.replace(/\\n/g, '\n'), 'utf8');
  const wantsTls = e.TEMPORAL_TLS || [e.TEMPORAL_TLS_CA, e.TEMPORAL_TLS_CERT, e.TEMPORAL_TLS_SERVER_NAME, e.TEMPORAL_API_KEY].some((value) => value !== undefined);
  return {
    tls: wantsTls
      ? {
          ...(e.TEMPORAL_TLS_SERVER_NAME ? { serverName: e.TEMPORAL_TLS_SERVER_NAME } : {}),
          ...(e.TEMPORAL_TLS_CA ? { serverRootCACertificate: pem(e.TEMPORAL_TLS_CA) } : {}),
          ...(e.TEMPORAL_TLS_CERT && e.TEMPORAL_TLS_KEY ? { clientCertPair: { crt: pem(e.TEMPORAL_TLS_CERT), key: pem(e.TEMPORAL_TLS_KEY) } } : {}),
        }
      : undefined,
    apiKey: e.TEMPORAL_API_KEY,
    tlsDisabled: e.TEMPORAL_TLS_DISABLED,
  };
}

/** Validates the environment; throws ConfigError naming every bad variable. */
export function loadConfig(source: Env = process.env): AppConfig {
  const { env, problems } = resolveSecretFiles(source);
  const parsed = environmentSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      problems.push(`${String(issue.path[0] ?? 'environment')}: ${issue.message}`);
    }
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  const e = parsed.data;
  const wallet: WalletServiceConfig | undefined =
    e.CONNECT_URL &&
    e.OP_URL &&
    e.TRANSFER_URL &&
    e.CONNECT_CLIENT_ID &&
    e.CONNECT_CLIENT_SECRET &&
    e.CONNECT_REDIRECT_URI &&
    e.TRANSFER_API_KEY &&
    e.PROFILE_DECRYPTION_JWK &&
    e.PROFILE_VERIFICATION_JWK &&
    e.MERCHANT_P2M_ID
      ? {
          connectUrl: e.CONNECT_URL,
          opUrl: e.OP_URL,
          transferUrl: e.TRANSFER_URL,
          clientId: e.CONNECT_CLIENT_ID,
          clientSecret: e.CONNECT_CLIENT_SECRET,
          redirectUri: e.CONNECT_REDIRECT_URI,
          transferApiKey: e.TRANSFER_API_KEY,
          profileDecryptionJwk: e.PROFILE_DECRYPTION_JWK,
          profileVerificationJwk: e.PROFILE_VERIFICATION_JWK,
          p2mId: e.MERCHANT_P2M_ID,
          timeoutMs: e.WALLET_TIMEOUT_MS,
        }
      : undefined;
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    publicUrl: e.PUBLIC_URL,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    workerMaxConcurrentActivities: e.WORKER_MAX_CONCURRENT_ACTIVITIES,
    databaseUrl: e.DATABASE_URL,
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.TEMPORAL_TASK_QUEUE, security: temporalSecurity(e) },
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
    payloadKeys: e.PAYLOAD_ENCRYPTION_KEYS,
    reconcile: { everyMinutes: e.RECONCILE_EVERY_MINUTES, olderThanSeconds: e.RECONCILE_AFTER_SECONDS },
    webhooks: {
      pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
      retry: { baseDelayMs: e.WEBHOOK_RETRY_BASE_MS, maxDelayMs: e.WEBHOOK_RETRY_MAX_MS, retryForMs: e.WEBHOOK_RETRY_FOR_MS },
    },
    purge: { everyMinutes: e.PURGE_EVERY_MINUTES, retentionSeconds: e.PURGE_RETENTION_HOURS * 3600 },
    wallet,
    walletTimeoutMs: e.WALLET_TIMEOUT_MS,
    connectReturnUrl: e.CONNECT_RETURN_URL,
    sessionAllowedIps: e.SESSION_ALLOWED_IPS ?? [],
    trustedProxies: e.TRUSTED_PROXIES ?? [],
    opsApiKeys: e.OPS_API_KEYS,
    tokenEncryptionKeys: e.TOKEN_ENCRYPTION_KEY,
    // Outside production, absent: derived from the oldest token key (stable while newer keys are
    // added in front); production requires its own key (productionProblems).
    fingerprintKey: e.IDEMPOTENCY_FINGERPRINT_KEY ?? (e.NODE_ENV !== 'production' && e.TOKEN_ENCRYPTION_KEY ? deriveFingerprintKey(e.TOKEN_ENCRYPTION_KEY.at(-1)!) : undefined),
    loginSigningKey: e.LOGIN_SIGNING_KEY === undefined ? undefined : Buffer.from(e.LOGIN_SIGNING_KEY, 'utf8'),
    codecAuthToken: e.CODEC_AUTH_TOKEN,
    metricsToken: e.METRICS_TOKEN,
    embeddedSessionTtlSeconds: e.EMBEDDED_SESSION_TTL_SECONDS,
    webSessionTtlSeconds: e.WEB_SESSION_TTL_SECONDS,
    rateLimits: { publicPerMinute: e.PUBLIC_RATE_LIMIT_PER_MINUTE, sessionPerMinute: e.SESSION_RATE_LIMIT_PER_MINUTE, webSessionPollsPerMinute: e.WEB_SESSION_POLL_LIMIT_PER_MINUTE },
    treasuryLimit: e.TREASURY_LIMIT,
    fundingLimits: {
      min: e.FUNDING_MIN ?? 1000n,
      max: e.FUNDING_MAX ?? 50_000_000n,
      userDailyAmount: e.USER_DAILY_AMOUNT ?? 100_000_000n,
      userDailyCount: e.USER_DAILY_COUNT,
      userPerMinute: e.USER_PER_MINUTE,
      timeZone: e.SETTLEMENT_TZ,
    },
    settlementTimeZone: e.SETTLEMENT_TZ,
    tracing: tracingConfig(e),
  };
}

/** On when a collector endpoint is set, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. */
function tracingConfig(e: Environment): TracingConfig | undefined {
  const url = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : `${e.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`);
  if (url === undefined || e.OTEL_SDK_DISABLED || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  return { url, headers: { ...e.OTEL_EXPORTER_OTLP_HEADERS, ...e.OTEL_EXPORTER_OTLP_TRACES_HEADERS }, serviceName: e.OTEL_SERVICE_NAME };
}

/** A config whose embedded defaults have all been resolved, as the API and the worker need it. */
export interface ResolvedConfig extends AppConfig {
  databaseUrl: string;
  temporal: { address: string; namespace: string; taskQueue: string; security: TemporalSecurity };
  wallet: WalletServiceConfig;
  tokenEncryptionKeys: Buffer[];
  fingerprintKey: Buffer;
}

/** This machine, in any spelling: loopback, unspecified, IPv4-mapped and the like. */
export function isLocalHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 0) return false;
  return isLocalAddress(host);
}

/** 127.0.0.0/8, 0.0.0.0/8, ::1, ::, and their IPv4-mapped and IPv4-compatible forms. */
function isLocalAddress(address: string): boolean {
  const mapped = /^(?:::ffff:|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)?.slice(1).join(':');
  if (mapped && mapped.includes(':')) {
    const [high = '0', low = '0'] = mapped.split(':');
    const first = Number.parseInt(high, 16) >> 8;
    return first === 127 || first === 0 || (Number.parseInt(high, 16) === 0 && Number.parseInt(low, 16) <= 1);
  }
  const v4 = mapped ?? (isIP(address) === 4 ? address : undefined);
  if (v4) {
    const first = Number(v4.split('.')[0]);
    return first === 127 || first === 0;
  }
  const expanded = expandIpv6(address);
  return expanded === '0000:0000:0000:0000:0000:0000:0000:0001' || expanded === '0000:0000:0000:0000:0000:0000:0000:0000';
}

function expandIpv6(address: string): string {
  const [head = '', tail = ''] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups] : headGroups;
  return groups.map((group) => group.padStart(4, '0')).join(':');
}

/** An allowlist entry that lets everyone in: a /0 range. */
const isEveryone = (entry: string) => /\/0+$/.test(entry);
/** An allowlist entry naming this machine (the sandbox's sender, a test address). */
const isLocalEntry = (entry: string) => isLocalHostname(entry.split('/')[0] ?? '');

/**
 * In production, weak settings that are fine for development stop start-up: ops keys shorter than
 * 32 bytes, the sandbox's credentials or loopback wallet URLs, no session allowlist, no HTTPS
 * public URL (the web session cookie must be Secure).
 */
/** Passwords the project's samples carry (.env.example, compose): never a production database's. */
const sampleDatabasePasswords = new Set(['walletflow', 'postgres', 'password', 'change-me']);

export function productionProblems(config: AppConfig): string[] {
  if (config.nodeEnv !== 'production') return [];
  const problems: string[] = [];
  if (config.opsApiKeys.length === 0) problems.push('OPS_API_KEYS: is required in production');
  for (const key of config.opsApiKeys) {
    if (Buffer.byteLength(key.key, 'utf8') < 32) {
      problems.push(`OPS_API_KEYS: the key named ${key.name} is shorter than 32 bytes; every key must be at least 32 bytes in production (openssl rand -base64 32)`);
    }
  }
  if (!config.tokenEncryptionKeys) problems.push('TOKEN_ENCRYPTION_KEY: is required in production');
  if (!config.fingerprintKey) problems.push('IDEMPOTENCY_FINGERPRINT_KEY: is required in production (openssl rand -base64 32; its own key, not a token key)');
  if (config.wallet) {
    for (const [name, url] of [['CONNECT_URL', config.wallet.connectUrl], ['OP_URL', config.wallet.opUrl], ['TRANSFER_URL', config.wallet.transferUrl]] as const) {
      const parsed = new URL(url);
      if (isLocalHostname(parsed.hostname)) {
        problems.push(`${name}: points at this machine (the sandbox?); production needs the operator's service`);
      } else if (parsed.protocol !== 'https:') {
        problems.push(`${name}: must be an https:// address in production (tokens and codes travel on it)`);
      }
    }
    if (config.wallet.clientId.startsWith('sandbox-')) problems.push('CONNECT_CLIENT_ID: is a sandbox client id; production needs the operator-issued credentials');
    const verification = config.wallet.profileVerificationJwk as { k?: unknown };
    if (typeof verification.k === 'string' && Buffer.from(verification.k, 'base64url').length < 32) {
      problems.push('PROFILE_VERIFICATION_JWK: the HS256 key is shorter than 32 bytes; production needs the operator-issued key');
    }
  }
  if (config.loginSigningKey && config.loginSigningKey.length < 32) {
    problems.push('LOGIN_SIGNING_KEY: must be at least 32 bytes in production (openssl rand -base64 32)');
  }
  if (config.sessionAllowedIps.length === 0) problems.push("SESSION_ALLOWED_IPS: is required in production (the operator's sender addresses)");
  for (const entry of config.sessionAllowedIps) {
    if (isEveryone(entry)) problems.push(`SESSION_ALLOWED_IPS: ${entry} lets every address call the session URL; list the operator's sender addresses`);
    else if (isLocalEntry(entry)) problems.push(`SESSION_ALLOWED_IPS: ${entry} is this machine (the sandbox?); list the operator's sender addresses`);
  }
  if (!config.publicUrl?.startsWith('https://')) problems.push('PUBLIC_URL: must be the https:// address of the API in production');
  else if (config.trustedProxies.length === 0) {
    problems.push('TRUSTED_PROXIES: is required in production when PUBLIC_URL is https (the TLS proxy in front of the API); without it every client looks like the proxy');
  }
  for (const entry of config.trustedProxies) {
    if (isEveryone(entry)) problems.push(`TRUSTED_PROXIES: ${entry} would let any client choose its own address; list the proxies`);
  }
  const temporal = config.temporal.security;
  if (!temporal.tls && !temporal.tlsDisabled) {
    problems.push('TEMPORAL_TLS: production reaches Temporal over TLS (TEMPORAL_TLS=true, TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT/KEY, TEMPORAL_API_KEY) or says TEMPORAL_TLS_DISABLED=true');
  }
  if (config.treasuryLimit === undefined) problems.push('TREASURY_LIMIT: is required in production (how far the treasury may go below zero, e.g. "0.00")');
  // Issue 26 #5: what compose alone used to insist on, and the sample values it ships.
  if (!config.payloadKeys || config.payloadKeys.length === 0) {
    problems.push('PAYLOAD_ENCRYPTION_KEYS: is required in production (workflow payloads in Temporal are encrypted; see docs/payload-encryption.md)');
  }
  if (config.databaseUrl && sampleDatabasePasswords.has(decodeURIComponent(new URL(config.databaseUrl).password))) {
    problems.push("DATABASE_URL: uses the sample password of .env.example (POSTGRES_PASSWORD); production needs its own (openssl rand -base64 24)");
  }
  if (!config.metricsToken) problems.push('METRICS_TOKEN: is required in production (GET /metrics shows business volumes; give Prometheus the token as a bearer)');
  else if (config.metricsToken.length < 32) problems.push('METRICS_TOKEN: must be at least 32 characters in production');
  if (config.fundingLimits.min > config.fundingLimits.max) problems.push('FUNDING_MIN: must not exceed FUNDING_MAX');
  return problems;
}

/** For processes that run against concrete services (the API and the worker). */
export function requireResolved(config: AppConfig): ResolvedConfig {
  const problems: string[] = [...productionProblems(config)];
  if (!config.databaseUrl) problems.push('DATABASE_URL: is required (`npm run dev` starts an embedded PostgreSQL)');
  if (!config.temporal.address) problems.push('TEMPORAL_ADDRESS: is required (`npm run dev` starts the Temporal dev server)');
  if (!config.wallet) problems.push(`${walletServiceVariables.join(', ')}: are required (\`npm run dev\` starts the sandbox)`);
  if (!config.tokenEncryptionKeys) problems.push('TOKEN_ENCRYPTION_KEY: is required (32 bytes, base64)');
  else if (!config.fingerprintKey) problems.push('IDEMPOTENCY_FINGERPRINT_KEY: is required (32 bytes, base64)');
  if (problems.length > 0) throw new ConfigError(problems);
  return config as ResolvedConfig;
}
