// HTTP/1.1 over a raw socket, byte for byte: for requests that fetch and node:http refuse to send
// (CR, LF or NUL in a header, invalid UTF-8, lying lengths). One request per connection.
import { connect } from 'node:net';

export interface RawRequest {
  method: string;
  /** Sent verbatim as the request target. */
  target: string;
  /** Sent verbatim, in order; values may hold any byte (a string is written as latin1). */
  headers?: Array<[string, string | Buffer]>;
  body?: string | Buffer;
  /** Default: a Content-Length of the body when there is one. */
  contentLength?: number | null;
  /** The client's own address (e.g. 127.0.0.2, to be a peer other than 127.0.0.1). */
  localAddress?: string;
  /** The Host header's value, sent verbatim; default: the base URL's host. */
  host?: string;
}

export interface RawResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with ", " (set-cookie with "\n"). */
  headers: Record<string, string>;
  body: string;
  /** Bytes of the whole answer as received. */
  raw: Buffer;
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

export function parseRawResponse(raw: Buffer): RawResponse {
  const headEnd = raw.indexOf('\r\n\r\n');
  const head = (headEnd < 0 ? raw : raw.subarray(0, headEnd)).toString('latin1');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] =
      headers[name] === undefined ? value : `${headers[name]}${name === 'set-cookie' ? '\n' : ', '}${value}`;
  }
  let body = headEnd < 0 ? Buffer.alloc(0) : raw.subarray(headEnd + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body);
  else if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']));
  return { status, headers, body: body.toString('utf8'), raw };
}

export function encodeRawRequest(request: RawRequest, host: string): Buffer {
  const body =
    request.body === undefined
      ? undefined
      : Buffer.isBuffer(request.body)
        ? request.body
        : Buffer.from(request.body, 'utf8');
  const lines: Buffer[] = [
    Buffer.from(
      `${request.method} ${request.target} HTTP/1.1\r\nHost: ${request.host ?? host}\r\nConnection: close\r\n`,
      'latin1',
    ),
  ];
  for (const [name, value] of request.headers ?? []) {
    lines.push(
      Buffer.concat([
        Buffer.from(`${name}: `, 'latin1'),
        Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'),
        Buffer.from('\r\n'),
      ]),
    );
  }
  const length = request.contentLength === undefined ? body?.length : request.contentLength;
  if (length !== undefined && length !== null) lines.push(Buffer.from(`Content-Length: ${length}\r\n`));
  lines.push(Buffer.from('\r\n'));
  if (body) lines.push(body);
  return Buffer.concat(lines);
}

/** Sends one request to `base` (http://host:port) and reads the answer until the server closes. */
export function rawHttp(base: string, request: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: url.hostname,
      port: Number(url.port),
      ...(request.localAddress ? { localAddress: request.localAddress } : {}),
    });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer to ${request.method} ${request.target} within ${timeoutMs} ms`));
    }, timeoutMs);
    // Not end(): a half-closed client makes Node's server abort the request. Connection: close
    // makes the server close after its answer.
    socket.on('connect', () => socket.write(encodeRawRequest(request, url.host)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A server that refuses at the parser may reset the connection after its answer.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET' || chunks.length === 0) {
        clearTimeout(timer);
        reject(error);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseRawResponse(Buffer.concat(chunks)));
    });
  });
}
