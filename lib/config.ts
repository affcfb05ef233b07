// The one place configuration is read: a zod schema over the environment (names fixed by
// contract-decisions section 1). A bad or missing value stops start-up with a message naming the
// variable. Secrets may come from files through the same name with `_FILE` appended.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import { parsePayloadKeys, type PayloadKey } from './payload-codec.ts';
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
  'DATABASE_URL',
  'PAYLOAD_ENCRYPTION_KEYS',
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

const base64Key = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value, ctx) => {
      const key = Buffer.from(value, 'base64');
      if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== value.trim().replace(/=+$/, '')) {
        ctx.addIssue({ code: 'custom', message: 'must be 32 bytes in base64 (openssl rand -base64 32)' });
        return z.NEVER;
      }
      return key;
    })
    .optional(),
);

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

/** Requests per client address per minute at the public routes (see AppConfig.rateLimits). */
export const defaultRateLimits = { publicPerMinute: 600, sessionPerMinute: 6000 } as const;

export const environmentSchema = z
  .object({
    NODE_ENV: z.preprocess(emptyAsUndefined, z.enum(['development', 'test', 'production']).default('development')),
    PORT: portNumber(3000),
    HOST: z.preprocess(emptyAsUndefined, z.string().default('127.0.0.1')),
    PUBLIC_URL: httpUrl,
    LOG_LEVEL: z.preprocess(emptyAsUndefined, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
    LOG_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['json', 'pretty']).default('json')),
    WORKER_METRICS_PORT: portNumber(9464),

    DATABASE_URL: postgresUrl,

    TEMPORAL_ADDRESS: z.preprocess(
      emptyAsUndefined,
      z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port').optional(),
    ),
    TEMPORAL_NAMESPACE: z.preprocess(emptyAsUndefined, z.string().min(1).default('default')),
    TEMPORAL_TASK_QUEUE: z.preprocess(emptyAsUndefined, z.string().min(1).default('walletflow')),
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
    OPS_API_KEYS: commaList,
    TOKEN_ENCRYPTION_KEY: base64Key,
    EMBEDDED_SESSION_TTL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(10).max(3600).default(120)),
    WEB_SESSION_TTL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(60).max(86_400).default(1200)),
    PUBLIC_RATE_LIMIT_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.publicPerMinute)),
    SESSION_RATE_LIMIT_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.sessionPerMinute)),

    // Money authority (contract-decisions section 10): amounts in PHP, as decimal strings.
    TREASURY_LIMIT: configAmount(undefined),
    FUNDING_MIN: configAmount('1000'),
    FUNDING_MAX: configAmount('50000000'),
    USER_DAILY_AMOUNT: configAmount('100000000'),
    USER_DAILY_COUNT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(20)),
    USER_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).default(5)),
    SETTLEMENT_TZ: timeZone,
  })
  .superRefine((env, ctx) => {
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
  /** Absent: the embedded PostgreSQL (started by `walletflow dev` and the test setup). */
  databaseUrl: string | undefined;
  temporal: { address: string | undefined; namespace: string; taskQueue: string };
  /** A prebuilt workflow bundle for the worker (production); absent: bundled from source at start. */
  workflowBundlePath: string | undefined;
  /** Temporal payload encryption keys (the first encrypts); absent: payloads are not encrypted. */
  payloadKeys: PayloadKey[] | undefined;
  /** The reconciliation sweep: how often, and how old a non-final funding must be to be looked at. */
  reconcile: { everyMinutes: number; olderThanSeconds: number };
  /** Absent: the built-in sandbox. */
  wallet: WalletServiceConfig | undefined;
  walletTimeoutMs: number;
  /** Where /connect/callback sends the user after linking; absent: a success page. */
  connectReturnUrl: string | undefined;
  sessionAllowedIps: string[];
  trustedProxies: string[];
  opsApiKeys: string[];
  tokenEncryptionKey: Buffer | undefined;
  /** How long a session id from the session URL may be used at the landing page. */
  embeddedSessionTtlSeconds: number;
  /** How long the partner's web session (cookie) in the wallet app's web view lasts. */
  webSessionTtlSeconds: number;
  /**
   * Requests per client address per minute: `publicPerMinute` for the landing page and connect
   * routes (each its own count), `sessionPerMinute` for the session URL, whose callers are the
   * wallet service's few sender addresses carrying every user's tile opening.
   */
  rateLimits: { publicPerMinute: number; sessionPerMinute: number };
  /** Section 10: how far the treasury may go below zero (thousandths); undefined: no limit (refused in production). */
  treasuryLimit: bigint | undefined;
  /** Section 10's funding limits (thousandths and counts) and the day they count in (SETTLEMENT_TZ). */
  fundingLimits: { min: bigint; max: bigint; userDailyAmount: bigint; userDailyCount: number; userPerMinute: number; timeZone: string };
  /** The day of GET /ops/settlements/{date} and of the daily limits. */
  settlementTimeZone: string;
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
    databaseUrl: e.DATABASE_URL,
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.TEMPORAL_TASK_QUEUE },
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
    payloadKeys: e.PAYLOAD_ENCRYPTION_KEYS,
    reconcile: { everyMinutes: e.RECONCILE_EVERY_MINUTES, olderThanSeconds: e.RECONCILE_AFTER_SECONDS },
    wallet,
    walletTimeoutMs: e.WALLET_TIMEOUT_MS,
    connectReturnUrl: e.CONNECT_RETURN_URL,
    sessionAllowedIps: e.SESSION_ALLOWED_IPS ?? [],
    trustedProxies: e.TRUSTED_PROXIES ?? [],
    opsApiKeys: e.OPS_API_KEYS ?? [],
    tokenEncryptionKey: e.TOKEN_ENCRYPTION_KEY,
    embeddedSessionTtlSeconds: e.EMBEDDED_SESSION_TTL_SECONDS,
    webSessionTtlSeconds: e.WEB_SESSION_TTL_SECONDS,
    rateLimits: { publicPerMinute: e.PUBLIC_RATE_LIMIT_PER_MINUTE, sessionPerMinute: e.SESSION_RATE_LIMIT_PER_MINUTE },
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
  };
}

/** A config whose embedded defaults have all been resolved, as the API and the worker need it. */
export interface ResolvedConfig extends AppConfig {
  databaseUrl: string;
  temporal: { address: string; namespace: string; taskQueue: string };
  wallet: WalletServiceConfig;
  tokenEncryptionKey: Buffer;
}

const loopbackHost = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;

/**
 * In production, weak settings that are fine for development stop start-up: ops keys shorter than
 * 32 bytes, the sandbox's credentials or loopback wallet URLs, no session allowlist, no HTTPS
 * public URL (the web session cookie must be Secure).
 */
export function productionProblems(config: AppConfig): string[] {
  if (config.nodeEnv !== 'production') return [];
  const problems: string[] = [];
  if (config.opsApiKeys.length === 0) problems.push('OPS_API_KEYS: is required in production');
  if (config.opsApiKeys.some((key) => Buffer.byteLength(key, 'utf8') < 32)) {
    problems.push('OPS_API_KEYS: every key must be at least 32 bytes in production (openssl rand -base64 32)');
  }
  if (!config.tokenEncryptionKey) problems.push('TOKEN_ENCRYPTION_KEY: is required in production');
  if (config.wallet) {
    for (const [name, url] of [['CONNECT_URL', config.wallet.connectUrl], ['OP_URL', config.wallet.opUrl], ['TRANSFER_URL', config.wallet.transferUrl]] as const) {
      if (loopbackHost.test(new URL(url).hostname) || new URL(url).hostname === '[::1]') {
        problems.push(`${name}: points at this machine (the sandbox?); production needs the operator's service`);
      }
    }
    if (config.wallet.clientId.startsWith('sandbox-')) problems.push('CONNECT_CLIENT_ID: is a sandbox client id; production needs the operator-issued credentials');
  }
  if (config.sessionAllowedIps.length === 0) problems.push("SESSION_ALLOWED_IPS: is required in production (the operator's sender addresses)");
  if (!config.publicUrl?.startsWith('https://')) problems.push('PUBLIC_URL: must be the https:// address of the API in production');
  if (config.treasuryLimit === undefined) problems.push('TREASURY_LIMIT: is required in production (how far the treasury may go below zero, e.g. "0.00")');
  if (config.fundingLimits.min > config.fundingLimits.max) problems.push('FUNDING_MIN: must not exceed FUNDING_MAX');
  return problems;
}

/** For processes that run against concrete services (the API and the worker). */
export function requireResolved(config: AppConfig): ResolvedConfig {
  const problems: string[] = [...productionProblems(config)];
  if (!config.databaseUrl) problems.push('DATABASE_URL: is required (`npm run dev` starts an embedded PostgreSQL)');
  if (!config.temporal.address) problems.push('TEMPORAL_ADDRESS: is required (`npm run dev` starts the Temporal dev server)');
  if (!config.wallet) problems.push(`${walletServiceVariables.join(', ')}: are required (\`npm run dev\` starts the sandbox)`);
  if (!config.tokenEncryptionKey) problems.push('TOKEN_ENCRYPTION_KEY: is required (32 bytes, base64)');
  if (problems.length > 0) throw new ConfigError(problems);
  return config as ResolvedConfig;
}
