// The environment schema: every variable walletflow reads (names fixed by contract-decisions
// section 1), its parser and its default, and the rules that tie variables together. lib/config/
// load-config.ts turns what it parses into the AppConfig the processes use.
import { fundingLanesModes } from '../../domain/funding.ts';
import { z } from 'zod';
import { parsePayloadKeys } from '../payload-codec.ts';
import { OpsKeyError, parseKeyOwners, parseOpsKeys } from '../ops-keys.ts';
import { ConsoleRolesError, parseConsoleRoles } from '../console-roles.ts';
import { profileDecryptionJwkSchema, profileVerificationJwkSchema } from '../../domain/jwk.ts';
import {
  base64Key,
  base64KeyRing,
  booleanFlag,
  commaList,
  configAmount,
  emptyAsUndefined,
  exactHttpUrl,
  httpUrl,
  isAddressOrCidr,
  jwkJson,
  optionalString,
  otlpHeaders,
  portNumber,
  postgresUrl,
  timeZone,
} from './parsers.ts';

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
  'CONSOLE_OIDC_CLIENT_SECRET',
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

/** The longest CONSOLE_IDLE_MINUTES may be: the purge keeps every console session that could still be live under it. */
/**
 * The longest WALLET_TIMEOUT_MS: the execute activities' start-to-close less the margin kept before it
 * (worker/activity-timeouts.ts `maxWalletTimeoutMs`, which test/unit/activity-timeouts.test.ts holds it to). Read with
 * the configuration, so the API, `walletflow config check` and the worker refuse a longer one alike, before a deploy
 * changes anything.
 */
export const WALLET_TIMEOUT_MS_MAX = 18_000;
export const CONSOLE_IDLE_MINUTES_MAX = 1440;

/** Requests per client address per minute at the public routes (see AppConfig.rateLimits). */
export const defaultRateLimits = {
  publicPerMinute: 600,
  sessionPerMinute: 6000,
  webSessionPollsPerMinute: 240,
} as const;

export const environmentSchema = z
  .object({
    NODE_ENV: z.preprocess(emptyAsUndefined, z.enum(['development', 'test', 'production']).default('development')),
    PORT: portNumber(3000),
    HOST: z.preprocess(emptyAsUndefined, z.string().default('127.0.0.1')),
    LISTEN_FD: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number({ error: 'must be a file descriptor number, 3 or more' })
        .int('must be a file descriptor number, 3 or more')
        .min(3, 'must be a file descriptor number, 3 or more')
        .optional(),
    ),
    PUBLIC_URL: httpUrl,
    LOG_LEVEL: z.preprocess(
      emptyAsUndefined,
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    ),
    LOG_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['json', 'pretty']).default('json')),
    WORKER_METRICS_PORT: portNumber(9464),
    WORKER_MAX_CONCURRENT_ACTIVITIES: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(1000).default(16),
    ),

    DATABASE_URL: postgresUrl,

    TEMPORAL_ADDRESS: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port')
        .optional(),
    ),
    TEMPORAL_NAMESPACE: z.preprocess(emptyAsUndefined, z.string().min(1).default('default')),
    TEMPORAL_TASK_QUEUE: z.preprocess(emptyAsUndefined, z.string().min(1).default('walletflow')),
    // Worker Deployment Versioning (docs/changing-workflows.md): the deployment the workers register
    // their build in (absent: the task queue's name), and whether a starting worker makes its build
    // the current version: only when the deployment has none yet, always (unless a newer build is
    // current), never, or `replace` (whatever build is current, and the runs pinned to other builds
    // move to it: the dev stack, whose restart leaves no worker of the build before; refused in
    // production).
    WORKER_DEPLOYMENT_NAME: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be 1 to 200 of A-Z a-z 0-9 _ - (a dot separates it from the build id)')
        .optional(),
    ),
    WORKER_PROMOTE: z.preprocess(
      emptyAsUndefined,
      z.enum(['first-deploy', 'always', 'never', 'replace']).default('first-deploy'),
    ),
    TEMPORAL_TLS: booleanFlag,
    TEMPORAL_TLS_CA: optionalString,
    TEMPORAL_TLS_CERT: optionalString,
    TEMPORAL_TLS_KEY: optionalString,
    TEMPORAL_TLS_SERVER_NAME: optionalString,
    TEMPORAL_API_KEY: optionalString,
    TEMPORAL_TLS_DISABLED: booleanFlag,
    CODEC_AUTH_TOKEN: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[\x21-\x7e]{16,512}$/, 'must be 16 to 512 printable characters')
        .optional(),
    ),
    METRICS_TOKEN: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[\x21-\x7e]{16,512}$/, 'must be 16 to 512 printable characters')
        .optional(),
    ),
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
    // The sweep's schedule and age: the names keep their first spelling (a deployment's environment holds them).
    RECONCILE_EVERY_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1440).default(5)),
    RECONCILE_AFTER_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(60).max(604_800).default(900)),
    // Webhooks (contract-decisions section 13): how often the deliverer looks for due deliveries,
    // and the retry schedule (first delay doubling up to the cap, for the window: 24 hours by default).
    WEBHOOK_POLL_INTERVAL_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(50).max(60_000).default(1000)),
    WEBHOOK_RETRY_BASE_MS: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(10).max(3_600_000).default(30_000),
    ),
    WEBHOOK_RETRY_MAX_MS: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(10).max(86_400_000).default(3_600_000),
    ),
    WEBHOOK_RETRY_FOR_MS: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(100).max(2_592_000_000).default(86_400_000),
    ),
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
    WALLET_TIMEOUT_MS: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number()
        .int()
        .min(100)
        .max(
          WALLET_TIMEOUT_MS_MAX,
          `at most ${WALLET_TIMEOUT_MS_MAX} ms: an execute sent at an attempt's start must end before its activity can time out and send another`,
        )
        .default(10_000),
    ),

    SESSION_ALLOWED_IPS: commaList.pipe(
      z.array(z.string().refine(isAddressOrCidr, 'each entry must be an IP address or CIDR range')).optional(),
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
    // Checked against OPS_API_KEYS below (the names it gives owners must be keys).
    OPS_KEY_OWNERS: commaList,
    TOKEN_ENCRYPTION_KEY: base64KeyRing,
    IDEMPOTENCY_FINGERPRINT_KEY: base64Key,
    LOGIN_SIGNING_KEY: optionalString,
    EMBEDDED_SESSION_TTL_SECONDS: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(10).max(3600).default(120),
    ),
    WEB_SESSION_TTL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(60).max(86_400).default(1200)),
    PUBLIC_RATE_LIMIT_PER_MINUTE: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.publicPerMinute),
    ),
    SESSION_RATE_LIMIT_PER_MINUTE: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(1_000_000).default(defaultRateLimits.sessionPerMinute),
    ),
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
    // A day's settlement run: the wallet retrieves it makes at once, at most (its 429s lower it).
    SETTLEMENT_MAX_IN_FLIGHT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(256).default(32)),
    // Settlement runs of any days at once: each holds a worker's activity slot for as long as it reads.
    SETTLEMENT_MAX_RUNS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(64).default(2)),

    // Funding batches (contract-decisions section 14): a batch whose total is at least the threshold
    // waits for a second key's approval (absent: none do; production requires it); items at once.
    BATCH_APPROVAL_THRESHOLD: configAmount(undefined),
    BATCH_MAX_IN_FLIGHT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1000).default(32)),
    // Which run carries a single funding (fundings/funding-paths.ts): its own workflow, or under
    // load (auto) or always a lane's shared run; off: always its own. Read by the API and the worker.
    FUNDING_LANES: z.preprocess(emptyAsUndefined, z.enum(fundingLanesModes).default('auto')),

    // The ops console (contract-decisions section 15): staff sign in with OpenID Connect when the
    // issuer, client id and secret are set (the roles map groups to scopes), else with a named ops key.
    // Kept as given: the provider's metadata names its issuer exactly, a trailing slash included (Authentik's, Azure AD
    // v1's), and discovery checks it.
    CONSOLE_OIDC_ISSUER: exactHttpUrl,
    CONSOLE_OIDC_CLIENT_ID: optionalString,
    CONSOLE_OIDC_CLIENT_SECRET: optionalString,
    CONSOLE_OIDC_ROLES: commaList.transform((entries, ctx) => {
      try {
        return parseConsoleRoles(entries ?? []);
      } catch (error) {
        if (!(error instanceof ConsoleRolesError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.message });
        return z.NEVER;
      }
    }),
    CONSOLE_OIDC_GROUPS_CLAIM: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable characters')
        .default('groups'),
    ),
    // The scopes a sign-in asks for, exactly (space-separated, `openid` among them); absent: `openid profile`, and the
    // groups claim's scope where the provider lists it.
    CONSOLE_OIDC_SCOPES: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'must be scopes separated by one space')
        .refine((value) => value.split(' ').includes('openid'), 'must include openid')
        .transform((value) => [...new Set(value.split(' '))])
        .optional(),
    ),
    CONSOLE_IDLE_MINUTES: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(CONSOLE_IDLE_MINUTES_MAX).default(15),
    ),
    CONSOLE_SESSION_HOURS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(168).default(8)),
    // Where the console links a funding's or payment's workflow (the Temporal UI); absent: no link.
    TEMPORAL_UI_URL: httpUrl,

    // Tracing (OpenTelemetry's standard names): off unless a collector endpoint is given.
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: exactHttpUrl,
    OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders,
    OTEL_SERVICE_NAME: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable characters')
        .optional(),
    ),
    OTEL_TRACES_EXPORTER: z.preprocess(
      emptyAsUndefined,
      z.enum(['otlp', 'none'], { error: 'must be otlp or none (the only exporters walletflow ships)' }).optional(),
    ),
    OTEL_SDK_DISABLED: booleanFlag,
  })
  .superRefine((env, ctx) => {
    try {
      parseKeyOwners(env.OPS_KEY_OWNERS ?? []);
    } catch (error) {
      if (!(error instanceof OpsKeyError)) throw error;
      ctx.addIssue({ code: 'custom', path: ['OPS_KEY_OWNERS'], message: error.message });
    }
    if (
      env.TEMPORAL_TLS_DISABLED &&
      (env.TEMPORAL_TLS || env.TEMPORAL_TLS_CA || env.TEMPORAL_TLS_CERT || env.TEMPORAL_TLS_KEY || env.TEMPORAL_API_KEY)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['TEMPORAL_TLS_DISABLED'],
        message: 'is true while TLS settings are given: choose one',
      });
    }
    if ((env.TEMPORAL_TLS_CERT === undefined) !== (env.TEMPORAL_TLS_KEY === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['TEMPORAL_TLS_CERT'],
        message: 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (the mTLS client certificate and its key) go together',
      });
    }
    const oidc = (['CONSOLE_OIDC_ISSUER', 'CONSOLE_OIDC_CLIENT_ID', 'CONSOLE_OIDC_CLIENT_SECRET'] as const).filter(
      (name) => env[name] !== undefined,
    );
    if (oidc.length > 0 && oidc.length < 3) {
      for (const name of ['CONSOLE_OIDC_ISSUER', 'CONSOLE_OIDC_CLIENT_ID', 'CONSOLE_OIDC_CLIENT_SECRET'] as const) {
        if (env[name] === undefined)
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: `is required when ${oidc.join(', ')} ${oidc.length === 1 ? 'is' : 'are'} set (the console's sign-in through OpenID Connect)`,
          });
      }
    }
    if (oidc.length === 3 && env.CONSOLE_OIDC_ROLES.size === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['CONSOLE_OIDC_ROLES'],
        message: 'is required with CONSOLE_OIDC_ISSUER: group=scope+scope,… (without it nobody may do anything)',
      });
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
