// The value parsers of the environment schema (lib/config/environment.ts): each reads one kind of
// variable as text, treats an empty value as unset, and names what a bad value should look like.
import { isIP } from 'node:net';
import { z } from 'zod';
import { fromNumeric } from '../../domain/money.ts';

/** A blank value counts as not set, so the variable's default applies. */
export const emptyAsUndefined = (value: unknown) =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;
export const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());

const httpUrlText = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** A base URL: paths are appended to it, so a trailing slash is dropped. */
export const httpUrl = z.preprocess(
  emptyAsUndefined,
  httpUrlText.transform((value) => value.replace(/\/+$/, '')).optional(),
);

/** The redirect URI must match the registered one exactly (interface): kept as given. */
export const exactHttpUrl = z.preprocess(emptyAsUndefined, httpUrlText.optional());

/**
 * Whether a URL reads as the one it was meant to be: it parses, its user and password decode, and no "@" is left past
 * its host (a password whose "/", "?" or "#" came first parses too, the rest of it read as the database's name, query
 * or fragment).
 */
function readsAsOneUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  if (`${url.pathname}${url.search}${url.hash}`.includes('@')) return false;
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    return true;
  } catch {
    return false;
  }
}

/**
 * A PostgreSQL URL that parses as one: a password pasted in unencoded (a "/" of `openssl rand -base64`) is refused
 * here, naming the variable and never its value, rather than throwing where the URL is first read.
 */
export const postgresUrl = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .refine((value) => /^postgres(ql)?:\/\/.+/.test(value), 'must be a postgres:// or postgresql:// URL')
    .refine(
      readsAsOneUrl,
      'is not a URL that parses: a password (POSTGRES_PASSWORD) holding / ? # @ : % or a space must be percent-encoded' +
        ' (openssl rand -hex 24 gives one that needs none)',
    )
    .optional(),
);

/** A JWK given as JSON text, validated by `schema`. */
export const jwkJson = <T extends z.ZodType>(schema: T) =>
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

export const commaList = z.preprocess(
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
  return key.length === 32 && key.toString('base64').replace(/=+$/, '') === value.trim().replace(/=+$/, '')
    ? key
    : undefined;
};

export const base64Key = z.preprocess(
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
export const base64KeyRing = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((value, ctx) => {
      const keys = value.split(',').map((item) => decodeKey32(item.trim()));
      const position = keys.findIndex((key) => !key);
      if (position >= 0) {
        ctx.addIssue({
          code: 'custom',
          message: `key ${position + 1}: every key must be 32 bytes in base64 (openssl rand -base64 32), comma-separated, the newest first`,
        });
        return z.NEVER;
      }
      return keys as Buffer[];
    })
    .optional(),
);

export const booleanFlag = z
  .preprocess(emptyAsUndefined, z.enum(['true', 'false'], { error: 'must be true or false' }).optional())
  .transform((value) => value === 'true');

export const portNumber = (fallback: number) =>
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
export const configAmount = (fallback: string | undefined) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^(0|[1-9]\d{0,12})(\.\d{1,2})?$/, 'must be a decimal amount such as "50000.00"')
      .transform((value) => fromNumeric(value))
      .optional()
      .transform((value) => value ?? (fallback === undefined ? undefined : BigInt(fallback))),
  );

/**
 * An IANA time zone's name (Asia/Manila, UTC). Never an offset: `+08:00` is UTC+8 to Node and UTC-8 to POSIX (and to
 * PostgreSQL's `AT TIME ZONE`), a trap for anyone who reads the setting. A day's instants are reckoned by Node alone
 * (ledger/settlement.ts SettlementDay) and handed to SQL as instants: PostgreSQL never reads the zone, so its own
 * readings (CET as a fixed abbreviation, a midnight that happens twice as the later one) cannot split a day.
 */
export const timeZone = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .refine((zone) => {
      if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return false;
      try {
        const resolved = new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
        return !/^[+-]/.test(resolved);
      } catch {
        return false;
      }
    }, 'must be an IANA time zone name such as Asia/Manila (not an offset)')
    .default('Asia/Manila'),
);

/**
 * OTLP headers (the OpenTelemetry specification's format): `key=value` pairs, comma-separated,
 * values percent-encoded. The values are secrets (an API key): an error names the entry, never it.
 */
export const otlpHeaders = z.preprocess(
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
          ctx.addIssue({
            code: 'custom',
            message: `entry ${position + 1}: must be key=value pairs, comma-separated (values percent-encoded)`,
          });
          return z.NEVER;
        }
        headers[key.toLowerCase()] = decoded;
      }
      return headers;
    })
    .optional(),
);
