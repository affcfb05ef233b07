// The Temporal client connection for the API and CLI, its readiness probe, and updates to a
// waiting workflow; how every process reaches a secured Temporal (TLS, an mTLS client
// certificate, an API key: TEMPORAL_TLS_*).
import { Client, Connection, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import type { TemporalSecurity } from './config.ts';
import { dataConverterFor, type PayloadKey } from './payload-codec.ts';

/** The connection options a TemporalSecurity gives (for Connection and the worker's NativeConnection alike). */
export function temporalConnectionOptions(address: string, security: TemporalSecurity | undefined): { address: string; tls?: NonNullable<TemporalSecurity['tls']>; apiKey?: string } {
  return { address, ...(security?.tls ? { tls: security.tls } : {}), ...(security?.apiKey ? { apiKey: security.apiKey } : {}) };
}

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  close(): Promise<void>;
}

/** Connects lazily: the API starts (and reports not-ready) even while Temporal is down. */
export function connectTemporal(address: string, namespace: string, payloadKeys?: PayloadKey[], security?: TemporalSecurity): TemporalHandle {
  const connection = Connection.lazy(temporalConnectionOptions(address, security));
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

/**
 * Sends an update to a workflow waiting for it (a review's resolve). `updated`: the workflow took
 * it. `refused`: its validator said no, and `stillWaiting` says the record no longer waits either.
 * `gone`: no running workflow has this id, so the caller settles through the database instead.
 * The record says it waits a moment before the workflow does (it parks, then waits): a refusal
 * while the record still waits is retried briefly.
 */
export async function updateWaitingWorkflow<Ret, Args extends [unknown, ...unknown[]]>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<Ret, Args>,
  args: Args,
  stillWaiting: () => Promise<boolean>,
): Promise<'updated' | 'refused' | 'gone'> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await client.workflow.getHandle(workflowId).executeUpdate(update, { args });
      return 'updated';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'gone';
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      if (!(await stillWaiting()) || attempt >= 20) return 'refused';
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
