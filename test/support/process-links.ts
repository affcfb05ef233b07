// What stands between a worker process and the services it calls, for tests that must tell one
// process's calls apart or cut it off: an HTTP forwarder that records every request it passes on
// (the wallet service, as one process sees it), and a TCP link that can be severed (its Temporal
// connection). Both run in the test process, on loopback.
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  path: string;
  /** When the request reached the forwarder (ms since the epoch). */
  at: number;
}

export interface HttpRecorder {
  /** The forwarder's origin (http://127.0.0.1:port): put it where the target's origin was. */
  origin: string;
  calls(): RecordedCall[];
  close(): Promise<void>;
}

/** Forwards every request to `targetOrigin` unchanged, recording it first. */
export async function startHttpRecorder(targetOrigin: string): Promise<HttpRecorder> {
  const target = new URL(targetOrigin);
  const calls: RecordedCall[] = [];
  const server: Server = createHttpServer((req, res) => {
    calls.push({ method: req.method ?? '', path: req.url ?? '', at: Date.now() });
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => [...calls],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface TcpLink {
  /** host:port to connect to instead of the target. */
  address: string;
  /** Cuts every connection and refuses new ones: the process behind it is cut off. */
  sever(): Promise<void>;
}

/** A TCP pass-through to `targetAddress` (host:port). */
export async function startTcpLink(targetAddress: string): Promise<TcpLink> {
  const [host, port] = [
    targetAddress.slice(0, targetAddress.lastIndexOf(':')),
    Number(targetAddress.slice(targetAddress.lastIndexOf(':') + 1)),
  ];
  const sockets = new Set<Socket>();
  const server = createTcpServer((client) => {
    const upstream = connect({ host, port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    sever: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
