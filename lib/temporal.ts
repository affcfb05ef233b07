// The Temporal client connection for the API and CLI, its readiness probe, and the settling of a
// review through its waiting workflow; how every process reaches a secured Temporal (TLS, an mTLS client
// certificate, an API key: TEMPORAL_TLS_*).
import { Client, Connection, WorkflowNotFoundError, WorkflowUpdateFailedError, type ClientInterceptors } from '@temporalio/client';
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
  const client = new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}), ...(interceptors ? { interceptors } : {}) });
  return { connection, client, close: () => connection.close() };
}

/** Readiness probe: Temporal's frontend answers for our namespace. */
export async function pingTemporal(handle: TemporalHandle, namespace: string, timeoutMs = 2000): Promise<void> {
  await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
    handle.connection.workflowService.describeNamespace({ namespace }),
  );
}

/** A review's record, as the settling of it needs it. */
export interface WaitingRecord {
  /** Whether the record still waits for its resolution (NEEDS_REVIEW). */
  stillWaiting(): Promise<boolean>;
  /** Settles it in the database alone; true when this call moved it. */
  settleWithoutWorkflow(): Promise<boolean>;
}

/**
 * Settles a review (a resolve update) through the workflow waiting for it, or, when no running
 * workflow has this id any more, through the record itself, audited the same way. `settled`:
 * this call moved the record. The record says it waits a moment before the workflow does (it
 * parks, then waits): a refusal while the record still waits is retried briefly.
 */
export async function settleReview<Ret, Args extends [unknown, ...unknown[]]>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<Ret, Args>,
  args: Args,
  record: WaitingRecord,
): Promise<{ settled: boolean; through: 'workflow' | 'database' }> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await client.workflow.getHandle(workflowId).executeUpdate(update, { args });
      return { settled: true, through: 'workflow' };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { settled: await record.settleWithoutWorkflow(), through: 'database' };
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      if (!(await record.stillWaiting()) || attempt >= 20) return { settled: false, through: 'workflow' };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
