// Loopback port helpers for the embedded services: find a free port, wait for one to listen.
import net from 'node:net';

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export async function findFreePort(): Promise<number> {
  const [port] = await findFreePorts(1);
  return port!;
}

/**
 * Asks the kernel for `count` free TCP ports on 127.0.0.1, all different: each probe stays bound
 * until the last is found. Ports found one after another, each probe closed before the next, may
 * repeat (a full run's dev stack got one port for both its PostgreSQL and its Temporal).
 */
export async function findFreePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let index = 0; index < count; index += 1) {
      const server = net.createServer();
      server.unref();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((server) => {
      const address = server.address();
      if (typeof address !== 'object' || !address) throw new Error('no port');
      return address.port;
    });
  } finally {
    await Promise.all(
      servers.map(
        (server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
  }
}

/** A listening socket this process holds on a free loopback port, for a child process to accept on. */
export interface HeldPort {
  port: number;
  /** The socket's file descriptor, for a child's `stdio` (stack/child-process.ts handOverSocket). */
  fd: number;
  /** Closes this process's copy; a child that was handed the socket keeps its own. */
  close(): Promise<void>;
}

/**
 * A free port on 127.0.0.1, kept bound and listening until `close()`. A port found free and bound
 * later by a child (findFreePort, then PORT) can be taken in between by any other process's
 * listen(0) or outgoing connection: under load an API then exited on EADDRINUSE and its callers
 * reached whatever had the port. Handed to the child as a listening socket, it cannot be.
 */
export async function holdFreePort(): Promise<HeldPort> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  // Node keeps a listening TCP socket's descriptor on its handle (POSIX): the one way to hand it on.
  const fd = (server as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof address !== 'object' || !address || typeof fd !== 'number' || fd < 0) {
    server.close();
    throw new Error('a listening socket with no port or no file descriptor');
  }
  server.unref();
  return {
    port: address.port,
    fd,
    close: () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
  };
}

/** True when something accepts TCP connections on host:port. */
export function isListening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Resolves once host:port accepts connections; rejects after `timeoutMs`, or early via `failed()`. */
export async function waitForPort(
  port: number,
  {
    host = '127.0.0.1',
    timeoutMs = 60_000,
    failed,
  }: { host?: string; timeoutMs?: number; failed?: () => string | undefined } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const failure = failed?.();
    if (failure) throw new Error(failure);
    if (await isListening(port, host)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`nothing listened on ${host}:${port} within ${timeoutMs} ms`);
}
