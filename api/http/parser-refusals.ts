// What Node's HTTP server refuses before Express sees a request (headers over its limit, a request its parser cannot
// read, a request not sent whole within the server's time, a CONNECT): answered as every other refusal is, a problem
// document with a code (RFC 9457) and the deny-all security headers, then the connection closed. Node's own answers
// were a bare status with no body, and a CONNECT had none at all.
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ProblemDocument } from './problem.ts';

interface ParserRefusal {
  status: number;
  reason: string;
  code: string;
  detail: string;
}

const headersTooLarge: ParserRefusal = {
  status: 431,
  reason: 'Request Header Fields Too Large',
  code: 'HEADERS_TOO_LARGE',
  detail: 'the request line and headers must be at most 16 KiB together',
};
const requestTimeout: ParserRefusal = {
  status: 408,
  reason: 'Request Timeout',
  code: 'REQUEST_TIMEOUT',
  detail: 'the request did not arrive whole in time; send it again',
};
const malformedRequest: ParserRefusal = {
  status: 400,
  reason: 'Bad Request',
  code: 'MALFORMED_REQUEST',
  detail: 'the request is not well-formed HTTP/1.1',
};
const connectRefused: ParserRefusal = {
  status: 501,
  reason: 'Not Implemented',
  code: 'METHOD_NOT_SUPPORTED',
  detail: 'this server takes no CONNECT',
};

/** The codes these answers carry (no route answers with them). */
export const PARSER_REFUSAL_CODES: readonly string[] = [
  headersTooLarge,
  requestTimeout,
  malformedRequest,
  connectRefused,
].map((refusal) => refusal.code);

/** The refusal of one of Node's client errors (its `code`: `HPE_…` from the parser, or the server's time-out). */
export function parserRefusalOf(errorCode: string | undefined): ParserRefusal {
  if (errorCode === 'HPE_HEADER_OVERFLOW') return headersTooLarge;
  if (errorCode === 'ERR_HTTP_REQUEST_TIMEOUT') return requestTimeout;
  return malformedRequest;
}

/** The whole answer as bytes on the wire: the status line, the headers every JSON answer carries, the document. */
export function parserRefusalResponse(refusal: ParserRefusal): string {
  const document: ProblemDocument = {
    type: 'about:blank',
    status: refusal.status,
    code: refusal.code,
    title: refusal.reason,
    detail: refusal.detail,
  };
  const body = JSON.stringify(document);
  return [
    `HTTP/1.1 ${refusal.status} ${refusal.reason}`,
    'Content-Type: application/problem+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    "Content-Security-Policy: default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
    'X-Content-Type-Options: nosniff',
    'X-Frame-Options: DENY',
    'Cross-Origin-Opener-Policy: same-origin',
    'Referrer-Policy: no-referrer',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

function answer(socket: Duplex, refusal: ParserRefusal): void {
  socket.end(parserRefusalResponse(refusal), () => socket.destroy());
}

/** Answers what the server refuses before the app sees it, on this server. */
export function answerParserRefusals(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node does: an answer only on a socket still open where no answer has begun (a reset peer gets none).
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent)
      answer(socket, parserRefusalOf(error.code));
    else socket.destroy();
  });
  server.on('connect', (_request, socket: Duplex) => answer(socket, connectRefused));
}
