// docker-compose.yml and .env.example read as docker compose reads them, without Docker (no engine
// runs here): .env's KEY=value lines, compose's interpolation (`${NAME:-default}`,
// `${NAME:?message}`, `$$`) from .env only, and what one service is started with: its
// environment, its image, and the files its secrets mount (`/run/secrets/<name>` from the
// top-level `secrets:`'s `file`).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export const root = path.resolve(import.meta.dirname, '../..');

/** KEY=value lines of a .env file (compose's reading: comments and blank lines skipped, quotes dropped). */
export function dotenv(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    values[match[1]!] = match[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return values;
}

/**
 * The names a .env.example offers: its KEY=value lines and its commented `# KEY=value` lines (an
 * optional setting shown with what leaving it out gives), each with the value shown.
 */
export function offeredSettings(text: string): Array<{ name: string; value: string; commented: boolean }> {
  return text.split('\n').flatMap((line) => {
    const match = /^(#)?\s*([A-Z][A-Z0-9_]*)=(\S*)/.exec(line);
    return match ? [{ name: match[2]!, value: match[3]!, commented: match[1] === '#' }] : [];
  });
}

/** Compose's interpolation of one value; a `:?`/`?` on a variable that is unset (or empty) is a problem. */
export function interpolate(value: string, env: Record<string, string>, problems: string[]): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^}$]|\$\$)*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced?: string, operator?: string, argument?: string, bare?: string) => {
      if (whole === '$$') return '$';
      const name = (braced ?? bare)!;
      const given = env[name];
      const missing = operator?.startsWith(':') ? !given : given === undefined;
      if (operator?.endsWith('-')) return missing ? interpolate(argument ?? '', env, problems) : given!;
      if (operator?.endsWith('?')) {
        if (missing) problems.push(`${name}: ${argument ?? 'required'}`);
        return given ?? '';
      }
      return given ?? '';
    },
  );
}

/** The names a compose value takes from .env (`${NAME…}` and `$NAME`, not `$$`). */
export function interpolatedNames(value: string): string[] {
  return [...value.matchAll(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)/g)].flatMap((match) => {
    const name = match[1] ?? match[2];
    return name === undefined ? [] : [name];
  });
}

/** The default a compose value gives when NAME is left out (`${NAME:-default}` or `${NAME-default}`), if it has one. */
export function composeDefault(value: string, name: string): string | undefined {
  return new RegExp(`\\$\\{${name}:?-((?:[^}$]|\\$\\$)*)\\}`).exec(value)?.[1];
}

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, unknown>;
  ports?: string[];
  expose?: string[];
  profiles?: string[];
  container_name?: string;
  depends_on?: Record<string, unknown> | string[];
  secrets?: Array<string | { source: string; target?: string }>;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string }>;
}

export const composeText = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
export const compose = parse(composeText, { merge: true }) as ComposeFile;
export const envExampleText = readFileSync(path.join(root, '.env.example'), 'utf8');
export const envExample = dotenv(envExampleText);

/**
 * A private RSA JWK in the shape the schema accepts (not a usable key), and a 32-byte base64 key filled with one byte.
 */
export const rsaJwk = JSON.stringify({
  kty: 'RSA',
  n: 'AQAB',
  e: 'AQAB',
  d: 'AQAB',
  p: 'AQAB',
  q: 'AQAB',
  dp: 'AQAB',
  dq: 'AQAB',
  qi: 'AQAB',
});
export const key = (fill: number) => Buffer.alloc(32, fill).toString('base64');

/**
 * The values .env.example's comments tell a reader to fill in for production: the operator's
 * URLs and registration (its example addresses), generated keys (`openssl rand -base64 32`), the
 * operator's sender addresses, the https address and its proxy.
 */
export const filledIn: Record<string, string> = {
  CONNECT_URL: 'https://connect.wallet.example',
  OP_URL: 'https://op.wallet.example',
  TRANSFER_URL: 'https://transfer.wallet.example/v1',
  CONNECT_CLIENT_ID: 'partner-client-7',
  CONNECT_CLIENT_SECRET: 'operator-issued-client-secret',
  CONNECT_REDIRECT_URI: 'https://walletflow.partner.example/connect/callback',
  TRANSFER_API_KEY: 'operator-issued-transfer-api-key',
  MERCHANT_P2M_ID: 'P2M000000042',
  PROFILE_DECRYPTION_JWK: rsaJwk,
  PROFILE_VERIFICATION_JWK: JSON.stringify({ kty: 'oct', k: Buffer.alloc(32, 3).toString('base64url') }),
  OPS_API_KEYS: `treasury:fund+read:${key(7)},checker:read+approve:${key(8)}`,
  TOKEN_ENCRYPTION_KEY: key(1),
  IDEMPOTENCY_FINGERPRINT_KEY: key(2),
  PAYLOAD_ENCRYPTION_KEYS: `k1:${key(5)}`,
  SESSION_ALLOWED_IPS: '203.0.113.0/28',
  PUBLIC_URL: 'https://walletflow.partner.example',
  TRUSTED_PROXIES: '10.0.0.2',
  POSTGRES_PASSWORD: 'a-generated-password-of-24-bytes',
  METRICS_TOKEN: key(9),
};

/** The services that run walletflow's own image with its configuration (not the sandbox: its SANDBOX_* only). */
export const walletflowServices = Object.entries(compose.services)
  .filter(([name, service]) => name !== 'sandbox' && /^walletflow:/.test(service.image ?? ''))
  .map(([name]) => name);

export interface StartedService {
  /** The container's environment. */
  env: Record<string, string>;
  /** The image it runs. */
  image: string;
  /**
   * Each file the container sees through a secret: its path inside → the file on the host (as given, relative to the
   * project).
   */
  mounts: Map<string, string>;
  /** What compose itself refuses (`:?` on an empty variable). */
  problems: string[];
}

/** What a service of compose is started with, given this .env. */
export function startService(service: string, dotEnv: Record<string, string>): StartedService {
  const problems: string[] = [];
  const definition = compose.services[service];
  if (!definition) throw new Error(`docker-compose.yml has no service ${service}`);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(definition.environment ?? {})) {
    env[name] = interpolate(String(value), dotEnv, problems);
  }
  const mounts = new Map<string, string>();
  for (const secret of definition.secrets ?? []) {
    const source = typeof secret === 'string' ? secret : secret.source;
    const target = typeof secret === 'string' ? secret : (secret.target ?? secret.source);
    const file = compose.secrets?.[source]?.file;
    if (file === undefined) throw new Error(`${service}: secret ${source} has no file in the top-level secrets`);
    mounts.set(target.startsWith('/') ? target : `/run/secrets/${target}`, interpolate(file, dotEnv, problems));
  }
  return { env, image: interpolate(definition.image ?? '', dotEnv, problems), mounts, problems };
}

/**
 * The environment as the configuration inside the container reads it: a value naming a mounted
 * file is the host file it mounts (what reading that path in the container reads).
 */
export function asMounted(started: StartedService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(started.env).map(([name, value]) => {
      const host = started.mounts.get(value);
      return [name, host === undefined ? value : path.resolve(root, host)];
    }),
  );
}
