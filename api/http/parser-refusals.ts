// What Node's HTTP server refuses before Express sees a request (headers over its limit, a request its parser cannot
// read, a request not sent whole within the server's time, a CONNECT): answered as every other refusal is, a problem
// document with a code (RFC 9457) and the deny-all security headers, then the connection closed. Node's own answers
// were a bare status with no body, and a CONNECT had none at all.
import { STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ProblemDocument } from './problem.ts';
import { securityHeaderValues } from './security-headers.ts';

interface ParserRefusal {
  status: number;
  code: string;
  detail: string;
}

/** Each refusal, by what it answers; the status line's reason and the document's title are Node's (STATUS_CODES). */
const refusals = {
  headersTooLarge: {
    status: 431,
    code: 'HEADERS_TOO_LARGE',
    detail: 'the request line and headers must be at most 16 KiB together',
  },
  chunkExtensionsTooLarge: {
    status: 413,
    code: 'CHUNK_EXTENSIONS_TOO_LARGE',
    detail: 'a chunk of the body carries more extensions than the server reads',
  },
  requestTimeout: {
    status: 408,
    code: 'REQUEST_TIMEOUT',
    detail: 'the request did not arrive whole in time; send it again',
  },
  malformedRequest: { status: 400, code: 'MALFORMED_REQUEST', detail: 'the request is not well-formed HTTP/1.1' },
  connectRefused: { status: 501, code: 'METHOD_NOT_SUPPORTED', detail: 'this server takes no CONNECT' },
} as const satisfies Record<string, ParserRefusal>;

/** The codes these answers carry (no route answers with them). */
export const PARSER_REFUSAL_CODES: readonly string[] = Object.values(refusals).map((refusal) => refusal.code);

/** The refusal of one of Node's client errors (its `code`: `HPE_…` from the parser, or the server's time-out). */
export function parserRefusalOf(errorCode: string | undefined): ParserRefusal {
  if (errorCode === 'HPE_HEADER_OVERFLOW') return refusals.headersTooLarge;
  if (errorCode === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return refusals.chunkExtensionsTooLarge;
  if (errorCode === 'ERR_HTTP_REQUEST_TIMEOUT') return refusals.requestTimeout;
  return refusals.malformedRequest;
}

/**
 * The whole answer as bytes on the wire: the status line, the security headers every answer carries, the document
 * (with `message` beside `detail`, as the session URL's callers read a refusal: contract section 6).
 */
export function parserRefusalResponse(refusal: ParserRefusal, security: Record<string, string>): string {
  const reason = STATUS_CODES[refusal.status] ?? 'Error';
  const document: ProblemDocument & { message: string } = {
    type: 'about:blank',
    status: refusal.status,
    code: refusal.code,
    title: reason,
    detail: refusal.detail,
    message: refusal.detail,
  };
  const body = JSON.stringify(document);
  return [
    `HTTP/1.1 ${refusal.status} ${reason}`,
    'Content-Type: application/problem+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    ...Object.entries(security).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** How long an answered socket may take to be read before it is closed all the same. */
const CLOSE_AFTER_MS = 5_000;
/** How long a request before a bad one on its connection may take to be answered before the connection is closed. */
const IN_FLIGHT_CLOSE_AFTER_MS = 60_000;

/**
 * Answers what the server refuses before the app sees it, on this server (`publicUrl`: PUBLIC_URL, for the headers
 * of an answer that reached the browser over TLS).
 */
export function answerParserRefusals(server: Server, options: { publicUrl?: string | undefined } = {}): void {
  const security = securityHeaderValues(options);
  // A socket is answered once: its parser keeps its error, and each later chunk brings the same error again.
  const answered = new WeakSet<Duplex>();
  const answer = (socket: Duplex, refusal: ParserRefusal) => {
    answered.add(socket);
    // Its own error listener and time-out: a socket handed over by 'connect' has neither any more (a reset peer would
    // be an uncaught error), and one that is never read must not stay open.
    socket.on('error', () => socket.destroy());
    const closing = setTimeout(() => socket.destroy(), CLOSE_AFTER_MS).unref();
    socket.once('close', () => clearTimeout(closing));
    socket.end(parserRefusalResponse(refusal, security), () => socket.destroy());
  };
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (inFlight?.req.complete === true) {
      // A request before the bad one on the connection (pipelined) is whole and still being answered: its answer goes
      // out, then the connection ends; the bad request gets none (an answer here would take the other's place).
      answered.add(socket);
      if (!inFlight.headersSent) inFlight.setHeader('Connection', 'close');
      inFlight.once('finish', () => socket.end());
      const closing = setTimeout(() => socket.destroy(), IN_FLIGHT_CLOSE_AFTER_MS).unref();
      socket.once('close', () => clearTimeout(closing));
      return;
    }
    // As Node does, an answer only where none has begun: to the request still arriving.
    if (inFlight?.headersSent === true) socket.destroy();
    else answer(socket, parserRefusalOf(error.code));
  });
  server.on('connect', (_request, socket: Duplex) => answer(socket, refusals.connectRefused));
}
