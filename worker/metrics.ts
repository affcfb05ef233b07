// The worker's scrape target: walletflow's series (lib/metrics.ts) and the Temporal SDK's runtime
// series (`temporal_…`: polls, task latencies, slots, sticky cache) merged at one GET /metrics on
// WORKER_METRICS_PORT. The SDK's Prometheus exporter listens on a loopback port of its own that
// only this server reads, so one port per worker is all a scraper needs. The SDK's own log lines
// go through walletflow's logger too (JSON, redacted) rather than to the console.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { startMetricsServer, type RunningMetricsServer } from '../lib/metrics-server.ts';

async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const sdkLevels: Record<string, LogLevel> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN' };

/**
 * Installs the SDK's runtime: its log lines through `logger`, and with `prometheus` its Prometheus
 * exporter on a loopback port (the URL returned). Must run before the first NativeConnection: the
 * runtime is process-wide and created once.
 */
export async function installTemporalRuntime(
  logger: Logger,
  options: { prometheus: boolean },
): Promise<{ sdkMetricsUrl: string | undefined }> {
  const sdkLogger = new DefaultLogger(sdkLevels[logger.level] ?? 'ERROR', ({ level, message, meta }) => {
    const method =
      level === 'TRACE'
        ? 'trace'
        : level === 'DEBUG'
          ? 'debug'
          : level === 'INFO'
            ? 'info'
            : level === 'WARN'
              ? 'warn'
              : 'error';
    logger[method]({ ...meta, sdk: true }, message);
  });
  const port = options.prometheus ? await freeLoopbackPort() : undefined;
  Runtime.install({
    logger: sdkLogger,
    ...(port === undefined
      ? {}
      : { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } } }),
  });
  return { sdkMetricsUrl: port === undefined ? undefined : `http://127.0.0.1:${port}/metrics` };
}

/** Serves `metrics` and, when given, the SDK's series read from `sdkMetricsUrl` at each scrape. */
export function serveWorkerMetrics(options: {
  metrics: Metrics;
  host: string;
  port: number;
  sdkMetricsUrl?: string;
}): Promise<RunningMetricsServer> {
  const { sdkMetricsUrl } = options;
  return startMetricsServer({
    registry: options.metrics.registry,
    host: options.host,
    port: options.port,
    ...(sdkMetricsUrl
      ? {
          append: async () => {
            const response = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(2000) });
            if (!response.ok) throw new Error(`the SDK exporter answered ${response.status}`);
            return response.text();
          },
        }
      : {}),
  });
}
