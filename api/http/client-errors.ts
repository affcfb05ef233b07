// Requests that fail before a route reads them (body parsers, path decoding) as a status, a code
// and a message, for each route family to answer in its own style; null means a server fault.
import { STATUS_CODES } from 'node:http';

export interface ClientError {
  status: number;
  code: string;
  message: string;
}

interface HttpishError {
  type?: unknown;
  code?: unknown;
  status?: unknown;
  statusCode?: unknown;
  limit?: unknown;
}

export function clientErrorOf(error: unknown): ClientError | null {
  if (typeof error !== 'object' || error === null) return null;
  const { type, code: errorCode, status, statusCode, limit } = error as HttpishError;
  switch (type) {
    case 'entity.too.large':
      return {
        status: 413,
        code: 'BODY_TOO_LARGE',
        message: typeof limit === 'number' ? `the body must be at most ${limit} bytes` : 'the body is too large',
      };
    case 'parameters.too.many':
      return { status: 413, code: 'TOO_MANY_PARAMETERS', message: 'the body has too many fields' };
    case 'entity.parse.failed':
      return { status: 400, code: 'MALFORMED_JSON', message: 'the body is not valid JSON' };
    case 'encoding.unsupported':
      return { status: 415, code: 'UNSUPPORTED_CONTENT_ENCODING', message: 'the Content-Encoding is not supported' };
    case 'charset.unsupported':
      return { status: 415, code: 'UNSUPPORTED_CHARSET', message: 'the body must be UTF-8' };
    case 'request.aborted':
      return { status: 400, code: 'REQUEST_ABORTED', message: 'the body was not sent completely' };
    case 'request.size.invalid':
      return { status: 400, code: 'BODY_LENGTH_MISMATCH', message: 'the body does not match its Content-Length' };
  }
  // A Content-Encoding the body does not match (zlib's Z_DATA_ERROR and friends, as a 400).
  if (typeof errorCode === 'string' && errorCode.startsWith('Z_'))
    return { status: 400, code: 'MALFORMED_BODY', message: 'the body could not be decompressed' };
  // Anything else the framework marks as the client's fault, such as a path segment that is not
  // valid percent-encoded UTF-8 (400 "Failed to decode param").
  const code = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : 0;
  if (code >= 400 && code < 500)
    return {
      status: code,
      code: 'BAD_REQUEST',
      message: `the request could not be read (${STATUS_CODES[code] ?? code})`,
    };
  return null;
}
