// The structured logger (pino, JSON lines; `pretty` for people at a terminal). Secret-bearing
// fields are redacted wherever they appear, so a careless `log.info({ body })` cannot leak a
// token, code or key; `code` is redacted only where it holds a secret (a cash-in code in a
// recipient, an OAuth code in a query), since everywhere else it is the wallet's error code
// (M133, 7011) that ops need to read. Every line carries the ids of its unit of work.
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
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
  'cashInCode',
  'authorizationCode',
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

/**
 * Where a field named `code` holds a secret: a funding's recipient (the cash-in code) and an OAuth
 * callback's query (the authorization code), at any of the depths the named fields are redacted.
 */
export const redactedCodePaths = ['recipient.code', 'query.code', 'body.code'];

export type LogFormat = 'json' | 'pretty';

export function createLogger(
  options: {
    level?: string;
    name?: string;
    destination?: NodeJS.WritableStream;
    format?: LogFormat;
    /** The pretty printer's package (tests name a missing one to see the fallback). */
    prettyPackage?: string;
  } = {},
): Logger {
  const paths = [
    ...redactedFields.flatMap((field) => [field, `*.${field}`, `*.*.${field}`, `headers["${field.toLowerCase()}"]`]),
    ...redactedCodePaths.flatMap((path) => [path, `*.${path}`, `*.*.${path}`]),
  ];
  const destination = options.destination ?? process.stdout;
  const prettyStream =
    options.format === 'pretty' ? loadPretty(destination, options.prettyPackage ?? 'pino-pretty') : undefined;
  const logger = pino(
    {
      level: options.level ?? 'info',
      base: options.name ? { service: options.name } : {},
      redact: { paths: [...new Set(paths)], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // A copy: pino merges each line's fields into what the mixin returns.
      mixin: () => ({ ...currentLogContext() }),
    },
    prettyStream ?? destination,
  );
  if (options.format === 'pretty' && !prettyStream) {
    logger.warn(
      'LOG_FORMAT=pretty needs pino-pretty, a development dependency that is not installed here: logging JSON lines instead',
    );
  }
  return logger;
}

type PrettyFactory = (options: Record<string, unknown>) => DestinationStream;

/**
 * pino-pretty, loaded only when asked for: it is a development dependency (for `walletflow dev`),
 * absent from the production image, where LOG_FORMAT=pretty falls back to JSON with a warning.
 * Pretty printing runs in this thread (no transport worker).
 */
function loadPretty(destination: NodeJS.WritableStream, packageName: string): DestinationStream | undefined {
  let pretty: PrettyFactory;
  try {
    pretty = createRequire(import.meta.url)(packageName) as PrettyFactory;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
  return pretty({ destination, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true });
}
