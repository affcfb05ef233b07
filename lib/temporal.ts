// The Temporal client connection for the API and CLI, its readiness probe, and the settling of a
// review through its waiting workflow; how every process reaches a secured Temporal (TLS, an mTLS client
// certificate, an API key: TEMPORAL_TLS_*).
import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { TemporalSecurity } from './config.ts';
import { dataConverterFor, type PayloadKey } from './payload-codec.ts';

/** The connection options a TemporalSecurity gives (for Connection and the worker's NativeConnection alike). */
export function temporalConnectionOptions(
  address: string,
  security: TemporalSecurity | undefined,
): { address: string; tls?: NonNullable<TemporalSecurity['tls']>; apiKey?: string } {
  return {
    address,
    ...(security?.tls ? { tls: security.tls } : {}),
    ...(security?.apiKey ? { apiKey: security.apiKey } : {}),
  };
}

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  close(): Promise<void>;
}

/**
 * Connects lazily: the API starts (and reports not-ready) even while Temporal is down.
 * `interceptors`: the client's (tracing: lib/tracing.ts).
 */
export function connectTemporal(
  address: string,
  namespace: string,
  payloadKeys?: PayloadKey[],
  security?: TemporalSecurity,
  interceptors?: ClientInterceptors,
): TemporalHandle {
  const connection = Connection.lazy(temporalConnectionOptions(address, security));
  const dataConverter = dataConverterFor(payloadKeys);
  const client = new Client({
    connection,
    namespace,
    ...(dataConverter ? { dataConverter } : {}),
    ...(interceptors ? { interceptors } : {}),
  });
  return { connection, client, close: () => connection.close() };
}

/** Readiness probe: Temporal's frontend answers for our namespace. */
export async function pingTemporal(handle: TemporalHandle, namespace: string, timeoutMs = 2000): Promise<void> {
  await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
    handle.connection.workflowService.describeNamespace({ namespace }),
  );
}
