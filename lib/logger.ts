// The structured logger (pino, JSON lines). Secret-bearing fields are redacted wherever they
// appear, so a careless `log.info({ body })` cannot leak a token, code or key.
import { pino, type Logger } from 'pino';

export type { Logger };

/** Field names whose values never reach a log line. */
export const redactedFields = [
  'accessToken',
  'refreshToken',
  'access_token',
  'refresh_token',
  'id_token',
  'token',
  'code',
  'cashInCode',
  'clientSecret',
  'client_secret',
  'apiKey',
  'transferApiKey',
  'password',
  'authorization',
  'Authorization',
  'x-authorization',
  'X-Authorization',
  'cookie',
  'set-cookie',
];

export function createLogger(options: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const paths = redactedFields.flatMap((field) => [field, `*.${field}`, `*.*.${field}`, `headers["${field.toLowerCase()}"]`]);
  return pino(
    {
      level: options.level ?? 'info',
      base: options.name ? { service: options.name } : {},
      redact: { paths: [...new Set(paths)], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? process.stdout,
  );
}
