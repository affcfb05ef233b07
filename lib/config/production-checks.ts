// The production checks: settings that are fine for development (the sandbox's credentials,
// loopback URLs, short keys, sample passwords, no allowlist) stop start-up when NODE_ENV=production.
import { isIP } from 'node:net';
import type { AppConfig } from './load-config.ts';

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
  const mapped =
    /^(?:::ffff:|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ??
    /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)?.slice(1).join(':');
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
  return (
    expanded === '0000:0000:0000:0000:0000:0000:0000:0001' || expanded === '0000:0000:0000:0000:0000:0000:0000:0000'
  );
}

function expandIpv6(address: string): string {
  const [head = '', tail = ''] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  return groups.map((group) => group.padStart(4, '0')).join(':');
}

/** An allowlist entry that lets everyone in: a /0 range. */
const isEveryone = (entry: string) => /\/0+$/.test(entry);
/** An allowlist entry naming this machine (the sandbox's sender, a test address). */
const isLocalEntry = (entry: string) => isLocalHostname(entry.split('/')[0] ?? '');

/** Passwords the project's samples carry (.env.example, compose): never a production database's. */
const sampleDatabasePasswords = new Set(['walletflow', 'postgres', 'password', 'change-me']);

/**
 * The redirect URI in production: https, not this machine, and exactly PUBLIC_URL's
 * /connect/callback. /connect/start (on PUBLIC_URL: login URLs are minted there) sets the login's
 * cookie for that host, and the callback refuses a browser without it, so a redirect URI anywhere
 * else (a sample's localhost, another host, a trailing slash the exact router answers 404) makes
 * every standalone login fail.
 */
function redirectUriProblems(redirectUri: string, publicUrl: string | undefined): string[] {
  const parsed = new URL(redirectUri);
  if (isLocalHostname(parsed.hostname))
    return [
      "CONNECT_REDIRECT_URI: points at this machine (a sample value?); production needs PUBLIC_URL's /connect/callback as registered with the operator",
    ];
  if (parsed.protocol !== 'https:')
    return [
      "CONNECT_REDIRECT_URI: must be an https:// address in production (the user's authorization code travels to it)",
    ];
  if (!publicUrl?.startsWith('https://')) return [];
  const expected = new URL(`${publicUrl}/connect/callback`).href;
  return parsed.href === expected
    ? []
    : [
        `CONNECT_REDIRECT_URI: must be ${expected} (PUBLIC_URL's /connect/callback) in production: the login's cookie is set on PUBLIC_URL, and the callback refuses a browser without it`,
      ];
}

/** How long a webhook delivery is retried, at least, in production (contract-decisions section 13). */
const WEBHOOK_RETRY_AT_LEAST_MS = 86_400_000;

/**
 * In production, weak settings that are fine for development stop start-up: ops keys shorter than
 * 32 bytes, the sandbox's credentials or loopback wallet URLs, no session allowlist, no HTTPS
 * public URL (the web session cookie must be Secure), webhooks retried for less than 24 hours.
 */
export function productionProblems(config: AppConfig): string[] {
  if (config.nodeEnv !== 'production') return [];
  const problems: string[] = [];
  if (config.opsApiKeys.length === 0) problems.push('OPS_API_KEYS: is required in production');
  if (config.workerDeployment.promote === 'replace')
    problems.push(
      'WORKER_PROMOTE: replace is walletflow dev’s (it moves runs pinned to other builds onto this one, whose earlier workers may still run), refused in production; use first-deploy or never, and walletflow deploy promote',
    );
  for (const [index, key] of config.opsApiKeys.entries()) {
    // No name to audit, every scope (contract-decisions section 12): a development convenience only.
    if (key.bare)
      problems.push(
        `OPS_API_KEYS: entry ${index + 1} is a bare key (no name, every scope), refused in production; write it as name:scopes:key, one of them named default (default:<scopes>:<key>) while anything it did is still open: its acts are recorded as default's, and a batch it stored that awaits approval is then still its own (another name could approve it); only one named entry may be default, so settle the batches awaiting approval before the others get names of their own`,
      );
    if (Buffer.byteLength(key.key, 'utf8') < 32) {
      problems.push(
        `OPS_API_KEYS: the key named ${key.name} is shorter than 32 bytes; every key must be at least 32 bytes in production (openssl rand -base64 32)`,
      );
    }
  }
  if (!config.tokenEncryptionKeys) problems.push('TOKEN_ENCRYPTION_KEY: is required in production');
  // Contract-decisions section 13: a delivery is retried for at least 24 hours before it is FAILED (shorter: tests).
  if (config.webhooks.retry.retryForMs < WEBHOOK_RETRY_AT_LEAST_MS)
    problems.push(
      `WEBHOOK_RETRY_FOR_MS: ${config.webhooks.retry.retryForMs} is under 24 hours (${WEBHOOK_RETRY_AT_LEAST_MS}); a delivery is retried at least that long before it is FAILED, refused in production`,
    );
  if (config.console.oidc && !config.console.oidc.issuer.startsWith('https:'))
    problems.push('CONSOLE_OIDC_ISSUER: must be an https:// address in production (staff sign in through it)');
  if (!config.fingerprintKey)
    problems.push(
      'IDEMPOTENCY_FINGERPRINT_KEY: is required in production (openssl rand -base64 32; its own key, not a token key)',
    );
  if (config.wallet) {
    for (const [name, url] of [
      ['CONNECT_URL', config.wallet.connectUrl],
      ['OP_URL', config.wallet.opUrl],
      ['TRANSFER_URL', config.wallet.transferUrl],
    ] as const) {
      const parsed = new URL(url);
      if (isLocalHostname(parsed.hostname)) {
        problems.push(`${name}: points at this machine (the sandbox?); production needs the operator's service`);
      } else if (parsed.protocol !== 'https:') {
        problems.push(`${name}: must be an https:// address in production (tokens and codes travel on it)`);
      }
    }
    if (config.wallet.clientId.startsWith('sandbox-'))
      problems.push('CONNECT_CLIENT_ID: is a sandbox client id; production needs the operator-issued credentials');
    problems.push(...redirectUriProblems(config.wallet.redirectUri, config.publicUrl));
    const verification = config.wallet.profileVerificationJwk as { k?: unknown };
    if (typeof verification.k === 'string' && Buffer.from(verification.k, 'base64url').length < 32) {
      problems.push(
        'PROFILE_VERIFICATION_JWK: the HS256 key is shorter than 32 bytes; production needs the operator-issued key',
      );
    }
  }
  if (config.loginSigningKey && config.loginSigningKey.length < 32) {
    problems.push('LOGIN_SIGNING_KEY: must be at least 32 bytes in production (openssl rand -base64 32)');
  }
  if (config.sessionAllowedIps.length === 0)
    problems.push("SESSION_ALLOWED_IPS: is required in production (the operator's sender addresses)");
  for (const entry of config.sessionAllowedIps) {
    if (isEveryone(entry))
      problems.push(
        `SESSION_ALLOWED_IPS: ${entry} lets every address call the session URL; list the operator's sender addresses`,
      );
    else if (isLocalEntry(entry))
      problems.push(
        `SESSION_ALLOWED_IPS: ${entry} is this machine (the sandbox?); list the operator's sender addresses`,
      );
  }
  if (!config.publicUrl?.startsWith('https://'))
    problems.push('PUBLIC_URL: must be the https:// address of the API in production');
  else if (config.trustedProxies.length === 0) {
    problems.push(
      'TRUSTED_PROXIES: is required in production when PUBLIC_URL is https (the TLS proxy in front of the API); without it every client looks like the proxy',
    );
  }
  for (const entry of config.trustedProxies) {
    if (isEveryone(entry))
      problems.push(`TRUSTED_PROXIES: ${entry} would let any client choose its own address; list the proxies`);
  }
  const temporal = config.temporal.security;
  if (!temporal.tls && !temporal.tlsDisabled) {
    problems.push(
      'TEMPORAL_TLS: production reaches Temporal over TLS (TEMPORAL_TLS=true, TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT/KEY, TEMPORAL_API_KEY) or says TEMPORAL_TLS_DISABLED=true',
    );
  }
  if (config.treasuryLimit === undefined)
    problems.push('TREASURY_LIMIT: is required in production (how far the treasury may go below zero, e.g. "0.00")');
  // Checked here, not only by compose: a deployment without compose gets the same refusal, and the
  // sample values compose ships never reach production.
  if (!config.payloadKeys || config.payloadKeys.length === 0) {
    problems.push(
      'PAYLOAD_ENCRYPTION_KEYS: is required in production (workflow payloads in Temporal are encrypted; see docs/payload-encryption.md)',
    );
  }
  if (config.databaseUrl && sampleDatabasePasswords.has(decodeURIComponent(new URL(config.databaseUrl).password))) {
    problems.push(
      'DATABASE_URL: uses the sample password of .env.example (POSTGRES_PASSWORD); production needs its own (openssl rand -hex 24)',
    );
  }
  if (!config.metricsToken)
    problems.push(
      'METRICS_TOKEN: is required in production (GET /metrics shows business volumes; give Prometheus the token as a bearer)',
    );
  else if (config.metricsToken.length < 32)
    problems.push('METRICS_TOKEN: must be at least 32 characters in production');
  if (config.fundingLimits.min > config.fundingLimits.max) problems.push('FUNDING_MIN: must not exceed FUNDING_MAX');
  if (config.batches.approvalThreshold === null) {
    problems.push(
      'BATCH_APPROVAL_THRESHOLD: is required in production (a funding batch at or above it waits for a second key’s approval)',
    );
  }
  return problems;
}
