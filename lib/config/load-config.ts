// loadConfig: the environment (secrets from `NAME_FILE` files too) validated by the schema of
// lib/config/environment.ts and shaped into the AppConfig the API, the worker and the CLI use. A bad
// or missing value stops start-up with a ConfigError naming every variable that is wrong.
import type { FundingLanesMode } from '../../domain/funding.ts';
import { hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PayloadKey } from '../payload-codec.ts';
import { parseKeyOwners, type OpsKey, type OpsScope } from '../ops-keys.ts';
import type { KeyOwners } from '../../domain/actor.ts';
import type { ProfileDecryptionJwk, ProfileVerificationJwk } from '../../domain/jwk.ts';
import { environmentSchema, secretVariables, type Environment } from './environment.ts';
import type { PromotionPolicy } from '../worker-deployment.ts';

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
  /**
   * A listening socket the process that started the API handed over (socket activation): the API
   * accepts on it and binds neither PORT nor HOST. The test stacks hand one over so that no other
   * process can take the port between its choice and the API's start.
   */
  listenFd: number | undefined;
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
  /** Worker Deployment Versioning: the deployment's name, and when a starting worker makes its build current. */
  workerDeployment: { name: string; promote: PromotionPolicy };
  /** A prebuilt workflow bundle for the worker (production); absent: bundled from source at start. */
  workflowBundlePath: string | undefined;
  /** Temporal payload encryption keys (the first encrypts); absent: payloads are not encrypted. */
  payloadKeys: PayloadKey[] | undefined;
  /** The sweep: how often, and how old a non-final funding must be to be looked at. */
  /** The sweep (its settings keep their first names, RECONCILE_*). */
  sweep: { everyMinutes: number; olderThanSeconds: number };
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
   * volumes); absent (development only): /metrics is open. Required in production (lib/config/production-checks.ts).
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
  fundingLimits: {
    min: bigint;
    max: bigint;
    userDailyAmount: bigint;
    userDailyCount: number;
    userPerMinute: number;
    timeZone: string;
  };
  /**
   * Funding batches: the total (thousandths) from which a second key approves (null: none needs it), and items at once.
   */
  batches: { approvalThreshold: bigint | null; maxInFlight: number; keyOwners: KeyOwners };
  /** FUNDING_LANES: which run carries a single funding (fundings/funding-paths.ts). */
  fundingLanes: FundingLanesMode;
  /** The day of GET /ops/settlements/{date} and of the daily limits. */
  settlementTimeZone: string;
  /**
   * A day's settlement run: wallet retrieves at once, at most (SETTLEMENT_MAX_IN_FLIGHT); runs of any days at once, at
   * most (SETTLEMENT_MAX_RUNS).
   */
  settlement: { maxInFlight: number; maxRuns: number };
  /** OpenTelemetry traces to an OTLP/HTTP collector; absent: off (nothing of OpenTelemetry is loaded). */
  tracing: TracingConfig | undefined;
  /** The ops console (contract-decisions section 15). */
  console: ConsoleConfig;
}

/** The ops console's sign-in and sessions. */
export interface ConsoleConfig {
  /** OpenID Connect sign-in; absent: staff sign in with a named ops key. */
  oidc:
    | {
        issuer: string;
        clientId: string;
        clientSecret: string;
        roles: ReadonlyMap<string, ReadonlySet<OpsScope>>;
        groupsClaim: string;
        /** CONSOLE_OIDC_SCOPES: the scopes a sign-in asks for, exactly; absent: as api/console/sign-in.ts chooses. */
        scopes?: readonly string[];
      }
    | undefined;
  /** A session ends after this long without a request (CONSOLE_IDLE_MINUTES). */
  idleMinutes: number;
  /** and at the latest this long after sign-in (CONSOLE_SESSION_HOURS). */
  sessionHours: number;
  /** TEMPORAL_UI_URL: the Temporal UI the console links workflows to; absent: no link. */
  temporalUiUrl: string | undefined;
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
  tls:
    | { serverName?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } }
    | undefined;
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

/**
 * The environment with every `NAME_FILE` read into `NAME` and the `NAME_FILE` left out: what a command that starts
 * others with settings of its own (`walletflow dev`) builds them from, so that a file's value is never overruled by a
 * default beside it.
 */
export function withSecretFilesRead(source: Env = process.env): NodeJS.ProcessEnv {
  const { env, problems } = resolveSecretFiles(source);
  if (problems.length > 0) throw new ConfigError(problems);
  for (const name of secretVariables) delete env[`${name}_FILE`];
  return env;
}

/** The development fallback of the fingerprint key (what every version before the key ring used). */
function deriveFingerprintKey(tokenKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', tokenKey, Buffer.alloc(0), 'walletflow:funding-fingerprint', 32));
}

function temporalSecurity(e: Environment): TemporalSecurity {
  const pem = (text: string) => Buffer.from(text.replace(/\\n/g, '\n'), 'utf8');
  const wantsTls =
    e.TEMPORAL_TLS ||
    [e.TEMPORAL_TLS_CA, e.TEMPORAL_TLS_CERT, e.TEMPORAL_TLS_SERVER_NAME, e.TEMPORAL_API_KEY].some(
      (value) => value !== undefined,
    );
  return {
    tls: wantsTls
      ? {
          ...(e.TEMPORAL_TLS_SERVER_NAME ? { serverName: e.TEMPORAL_TLS_SERVER_NAME } : {}),
          ...(e.TEMPORAL_TLS_CA ? { serverRootCACertificate: pem(e.TEMPORAL_TLS_CA) } : {}),
          ...(e.TEMPORAL_TLS_CERT && e.TEMPORAL_TLS_KEY
            ? { clientCertPair: { crt: pem(e.TEMPORAL_TLS_CERT), key: pem(e.TEMPORAL_TLS_KEY) } }
            : {}),
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
    listenFd: e.LISTEN_FD,
    publicUrl: e.PUBLIC_URL,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    workerMaxConcurrentActivities: e.WORKER_MAX_CONCURRENT_ACTIVITIES,
    databaseUrl: e.DATABASE_URL,
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      security: temporalSecurity(e),
    },
    workerDeployment: {
      name: e.WORKER_DEPLOYMENT_NAME ?? e.TEMPORAL_TASK_QUEUE.replace(/[^A-Za-z0-9_-]/g, '-'),
      promote: e.WORKER_PROMOTE,
    },
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH,
    payloadKeys: e.PAYLOAD_ENCRYPTION_KEYS,
    sweep: { everyMinutes: e.RECONCILE_EVERY_MINUTES, olderThanSeconds: e.RECONCILE_AFTER_SECONDS },
    webhooks: {
      pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
      retry: {
        baseDelayMs: e.WEBHOOK_RETRY_BASE_MS,
        maxDelayMs: e.WEBHOOK_RETRY_MAX_MS,
        retryForMs: e.WEBHOOK_RETRY_FOR_MS,
      },
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
    fingerprintKey:
      e.IDEMPOTENCY_FINGERPRINT_KEY ??
      (e.NODE_ENV !== 'production' && e.TOKEN_ENCRYPTION_KEY
        ? deriveFingerprintKey(e.TOKEN_ENCRYPTION_KEY.at(-1)!)
        : undefined),
    loginSigningKey: e.LOGIN_SIGNING_KEY === undefined ? undefined : Buffer.from(e.LOGIN_SIGNING_KEY, 'utf8'),
    codecAuthToken: e.CODEC_AUTH_TOKEN,
    metricsToken: e.METRICS_TOKEN,
    embeddedSessionTtlSeconds: e.EMBEDDED_SESSION_TTL_SECONDS,
    webSessionTtlSeconds: e.WEB_SESSION_TTL_SECONDS,
    rateLimits: {
      publicPerMinute: e.PUBLIC_RATE_LIMIT_PER_MINUTE,
      sessionPerMinute: e.SESSION_RATE_LIMIT_PER_MINUTE,
      webSessionPollsPerMinute: e.WEB_SESSION_POLL_LIMIT_PER_MINUTE,
    },
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
    settlement: { maxInFlight: e.SETTLEMENT_MAX_IN_FLIGHT, maxRuns: e.SETTLEMENT_MAX_RUNS },
    batches: {
      approvalThreshold: e.BATCH_APPROVAL_THRESHOLD ?? null,
      maxInFlight: e.BATCH_MAX_IN_FLIGHT,
      keyOwners: parseKeyOwners(e.OPS_KEY_OWNERS ?? []),
    },
    fundingLanes: e.FUNDING_LANES,
    tracing: tracingConfig(e),
    console: {
      oidc:
        e.CONSOLE_OIDC_ISSUER && e.CONSOLE_OIDC_CLIENT_ID && e.CONSOLE_OIDC_CLIENT_SECRET
          ? {
              issuer: e.CONSOLE_OIDC_ISSUER,
              clientId: e.CONSOLE_OIDC_CLIENT_ID,
              clientSecret: e.CONSOLE_OIDC_CLIENT_SECRET,
              roles: e.CONSOLE_OIDC_ROLES,
              groupsClaim: e.CONSOLE_OIDC_GROUPS_CLAIM,
              ...(e.CONSOLE_OIDC_SCOPES ? { scopes: e.CONSOLE_OIDC_SCOPES } : {}),
            }
          : undefined,
      idleMinutes: e.CONSOLE_IDLE_MINUTES,
      sessionHours: e.CONSOLE_SESSION_HOURS,
      temporalUiUrl: e.TEMPORAL_UI_URL,
    },
  };
}

/** On when a collector endpoint is set, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. */
function tracingConfig(e: Environment): TracingConfig | undefined {
  const url =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : `${e.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`);
  if (url === undefined || e.OTEL_SDK_DISABLED || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  return {
    url,
    headers: { ...e.OTEL_EXPORTER_OTLP_HEADERS, ...e.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    serviceName: e.OTEL_SERVICE_NAME,
  };
}
