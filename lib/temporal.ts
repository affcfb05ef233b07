// The Temporal client connection for the API and CLI, and its readiness probe.
import { Client, Connection } from '@temporalio/client';
import { dataConverterFor, type PayloadKey } from './payload-codec.ts';

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  close(): Promise<void>;
}

/** Connects lazily: the API starts (and reports not-ready) even while Temporal is down. */
export function connectTemporal(address: string, namespace: string, payloadKeys?: PayloadKey[]): TemporalHandle {
  const connection = Connection.lazy({ address });
  const dataConverter = dataConverterFor(payloadKeys);
  const client = new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) });
  return { connection, client, close: () => connection.close() };
}

/** Readiness probe: Temporal's frontend answers for our namespace. */
export async function pingTemporal(handle: TemporalHandle, namespace: string, timeoutMs = 2000): Promise<void> {
  await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
    handle.connection.workflowService.describeNamespace({ namespace }),
  );
}
