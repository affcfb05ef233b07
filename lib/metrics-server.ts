// A small HTTP server that serves one registry at GET /metrics (Prometheus text format), followed
// by whatever `append` adds (the Temporal SDK's own series): the worker's scrape target, since the
// worker has no HTTP surface of its own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface RunningMetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(options: {
  registry: Registry;
  port: number;
  host: string;
  /** More exposition text to serve after the registry's; a failure leaves it out (with a comment line). */
  append?: () => Promise<string>;
}): Promise<RunningMetricsServer> {
  const exposition = async () => {
    const own = await options.registry.metrics();
    if (!options.append) return own;
    const more = await options
      .append()
      .catch((error: Error) => `# walletflow: more series unavailable (${error.message.replace(/\s+/g, ' ')})\n`);
    return `${own.endsWith('\n') ? own : `${own}\n`}${more}`;
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: GET /metrics\n');
      return;
    }
    exposition().then(
      (text) =>
        res
          .writeHead(200, { 'content-type': options.registry.contentType, 'cache-control': 'no-store' })
          .end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
