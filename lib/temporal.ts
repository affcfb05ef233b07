// The Temporal client connection for the API and CLI, its readiness probe, a workflow's state as
// Temporal holds it (a read: the sweep's, the settlement's), and the settling of a review through its
// waiting workflow; how every process reaches a secured Temporal (TLS, an mTLS client certificate, an
// API key: TEMPORAL_TLS_*).
import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
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
 * The longest a workflow start or signal the API makes may take, the client's own retries included. Past it the call
 * fails DEADLINE_EXCEEDED, which a route answers 503 WORKFLOW_UNAVAILABLE with Retry-After
 * (lib/workflow-unavailable.ts).
 * With none, a Temporal refusing calls for load was retried for some 40 s before any answer, and one that takes calls
 * and never answers (a stuck frontend or proxy) was waited on for ever, the request's connection and its slot held.
 */
export const CALL_DEADLINE_MS = 10_000;

/** Bounds each start and signal by `deadlineMs` (a deadline set around the call is replaced by this one). */
function boundedWorkflowCalls(connection: Connection, deadlineMs: number): WorkflowClientInterceptor {
  const within = <T>(call: () => Promise<T>): Promise<T> => connection.withDeadline(Date.now() + deadlineMs, call);
  return {
    startWithDetails: (input, next) => within(() => next(input)),
    signal: (input, next) => within(() => next(input)),
    signalWithStart: (input, next) => within(() => next(input)),
  };
}

/**
 * Connects lazily: the API starts (and reports not-ready) even while Temporal is down. Its starts and signals are
 * bounded (CALL_DEADLINE_MS, or `callDeadlineMs`). `interceptors`: the client's (tracing: lib/tracing.ts).
 */
export function connectTemporal(
  address: string,
  namespace: string,
  payloadKeys?: PayloadKey[],
  security?: TemporalSecurity,
  interceptors?: { workflow: WorkflowClientInterceptor[] },
  callDeadlineMs: number = CALL_DEADLINE_MS,
): TemporalHandle {
  const connection = Connection.lazy(temporalConnectionOptions(address, security));
  const dataConverter = dataConverterFor(payloadKeys);
  const client = new Client({
    connection,
    namespace,
    ...(dataConverter ? { dataConverter } : {}),
    interceptors: {
      workflow: [boundedWorkflowCalls(connection, callDeadlineMs), ...(interceptors?.workflow ?? [])],
    },
  });
  return { connection, client, close: () => connection.close() };
}

/** Readiness probe: Temporal's frontend answers for our namespace. */
export async function pingTemporal(handle: TemporalHandle, namespace: string, timeoutMs = 2000): Promise<void> {
  await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
    handle.connection.workflowService.describeNamespace({ namespace }),
  );
}

/**
 * A workflow as Temporal holds it now: open (`running`), ended (`closed`) or never started (`missing`), and the attempt
 * of its pending workflow task (1 when none, or a first try; more when it failed and is tried again). A read, which
 * starts nothing; given up after `timeoutMs` when one is given (Temporal unreachable: the caller's error).
 */
export async function workflowRunState(
  client: Client,
  workflowId: string,
  timeoutMs?: number,
): Promise<{ state: 'running' | 'closed' | 'missing'; taskAttempt: number }> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    const description = await (timeoutMs === undefined
      ? handle.describe()
      : client.connection.withDeadline(Date.now() + timeoutMs, () => handle.describe()));
    return {
      state: description.status.name === 'RUNNING' ? 'running' : 'closed',
      taskAttempt: Number(description.raw.pendingWorkflowTask?.attempt ?? 1),
    };
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return { state: 'missing', taskAttempt: 1 };
    throw error;
  }
}
