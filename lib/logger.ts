// The structured logger (pino, JSON lines; `pretty` for people at a terminal). Secret-bearing
// fields are redacted wherever they appear, so a careless `log.info({ body })` cannot leak a
// token, code or key. Every line carries the ids of its unit of work (lib/log-context.ts).
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { currentLogContext } from './log-context.ts';

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

export type LogFormat = 'json' | 'pretty';

export function createLogger(
  options: { level?: string; name?: string; destination?: NodeJS.WritableStream; format?: LogFormat } = {},
): Logger {
  const paths = redactedFields.flatMap((field) => [field, `*.${field}`, `*.*.${field}`, `headers["${field.toLowerCase()}"]`]);
  const destination = options.destination ?? process.stdout;
  return pino(
    {
      level: options.level ?? 'info',
      base: options.name ? { service: options.name } : {},
      redact: { paths: [...new Set(paths)], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // A copy: pino merges each line's fields into what the mixin returns.
      mixin: () => ({ ...currentLogContext() }),
    },
    // Pretty printing runs in this thread (no transport worker): it is for `walletflow dev` only.
    options.format === 'pretty' ? pretty({ destination, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }) : destination,
  );
}
