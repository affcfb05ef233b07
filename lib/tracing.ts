// OpenTelemetry traces, when TRACING is configured (lib/config.ts: OTEL_EXPORTER_OTLP_ENDPOINT and
// friends). Loaded with import() by the API and the worker only then: with tracing off not one
// OpenTelemetry module is loaded and nothing runs per request, workflow or wallet call.
//
// One trace per request: the API's SERVER span (a request to POST /ops/fundings), Temporal's
// StartWorkflow span (client interceptor), the workflow's RunWorkflow and StartActivity spans
// (workflow interceptors in the traced bundle, exported through a sink), each RunActivity span
// (activity interceptor) and a CLIENT span per wallet HTTP call. Span attributes are names, ids,
// HTTP methods, routes and statuses: never a token, a code, a key, an amount or a body.
import { context, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVICE_NAME,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker/index.js';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions.js';
import type { TracingConfig } from './config.ts';

/** Span attribute names of walletflow's own (the rest are OpenTelemetry's semantic conventions). */
export const tracingAttributes = {
  requestId: 'walletflow.request_id',
  walletOperation: 'walletflow.wallet.operation',
  walletService: 'walletflow.wallet.service',
  walletOutcome: 'walletflow.wallet.outcome',
  walletErrorCode: 'walletflow.wallet.error_code',
  requestReferenceNo: 'walletflow.request_reference_no',
} as const;

/** A wallet call as the wallet client reports it (wallet/call-record.ts): ids, names, status. */
interface WalletCallFacts {
  requestReferenceNo: string;
  service: string;
  operation: string;
  method: string;
  path: string;
}

interface WalletCallEnd {
  httpStatus: number | null;
  outcome: string;
  errorCode: string | null;
}

/** An API request's span: `run` makes it the parent of what the request does; `end` once, when answered. */
export interface RequestSpan {
  run<T>(work: () => T): T;
  end(route: string, status: number): void;
}

export interface Tracing {
  /** For every Temporal Client of the process: StartWorkflow, SignalWorkflow, … spans, and the trace in the headers. */
  clientInterceptors: { workflow: WorkflowClientInterceptor[] };
  /** The worker's activity interceptors (RunActivity spans, trace ids on activity log lines). */
  workerInterceptors: Pick<WorkerInterceptors, 'activity'>;
  /** The sink workflow spans leave the workflow sandbox through. */
  workflowSinks: InjectedSinks<OpenTelemetrySinks>;
  /** The wallet client's onCallStart hook: one CLIENT span per HTTP call. */
  walletCallSpan(call: WalletCallFacts): (record: WalletCallEnd) => void;
  /** A SERVER span for an API request. */
  startRequestSpan(method: string, requestId: string | undefined): RequestSpan;
  /** Exports what is buffered and stops; never rejects (what the collector refused is dropped). */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** `walletflow-api`, `walletflow-worker`: OTEL_SERVICE_NAME when not set. */
  defaultServiceName: string;
  /** Instead of the OTLP/HTTP exporter (tests). */
  exporter?: SpanExporter;
}

/** Connection failures after which a span batch is sent again: nothing reached the collector, or it said nothing. */
const droppedConnectionCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);
/** The pauses before each sending again of a batch whose connection dropped (jittered by up to half). */
const RESEND_PAUSES_MS = [100, 400, 1_600];

function droppedConnection(error: Error | undefined): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && droppedConnectionCodes.has(code);
}

/**
 * The OTLP/HTTP exporter, sending a batch again when its connection dropped before an answer (a
 * collector closing an idle keep-alive connection as the batch is sent, a collector restarting),
 * as the OTLP specification asks of a client; this release of the exporter sends it once and the
 * batch's spans are lost. A batch the collector answered (refused, or 429/5xx: the exporter's own
 * retries) is not sent again here; nor one that timed out, which may have arrived.
 */
export function resendOnDroppedConnection(
  exporter: SpanExporter,
  pausesMs: readonly number[] = RESEND_PAUSES_MS,
): SpanExporter {
  let stopped = false;
  return {
    export(spans, resultCallback) {
      const attempt = (resent: number) =>
        exporter.export(spans, (result) => {
          const pause = pausesMs[resent];
          // A success carries no error: only a dropped connection's batch is sent again.
          if (stopped || pause === undefined || !droppedConnection(result.error)) return resultCallback(result);
          setTimeout(() => attempt(resent + 1), pause * (1 + Math.random() / 2));
        });
      attempt(0);
    },
    shutdown() {
      stopped = true;
      return exporter.shutdown();
    },
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/** Installs the tracer provider (W3C trace context, async-local context) and builds the process's hooks. */
export function startTracing(config: TracingConfig, options: TracingOptions): Tracing {
  const resource = new Resource({ [ATTR_SERVICE_NAME]: config.serviceName ?? options.defaultServiceName });
  const exporter =
    options.exporter ?? resendOnDroppedConnection(new OTLPTraceExporter({ url: config.url, headers: config.headers }));
  // Batched: OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, … (read by the SDK) tune it.
  const processor: SpanProcessor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  const tracer = trace.getTracer('walletflow');
  const interceptorOptions = { tracer };

  return {
    clientInterceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor(interceptorOptions)] },
    workerInterceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, interceptorOptions),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    // Workflow spans are made inside the sandbox and handed out here after each activation.
    workflowSinks: { exporter: makeWorkflowExporter(processor, resource) },
    walletCallSpan(call) {
      const span = tracer.startSpan(
        `wallet ${call.operation}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            [tracingAttributes.walletOperation]: call.operation,
            [tracingAttributes.walletService]: call.service,
            [tracingAttributes.requestReferenceNo]: call.requestReferenceNo,
            [ATTR_HTTP_REQUEST_METHOD]: call.method,
            [ATTR_URL_PATH]: call.path,
          },
        },
        context.active(),
      );
      return (record) => {
        const attributes: Attributes = { [tracingAttributes.walletOutcome]: record.outcome };
        if (record.httpStatus !== null) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = record.httpStatus;
        if (record.errorCode !== null) attributes[tracingAttributes.walletErrorCode] = record.errorCode;
        span.setAttributes(attributes);
        if (record.outcome !== 'ok')
          span.setStatus({ code: SpanStatusCode.ERROR, message: record.errorCode ?? record.outcome });
        span.end();
      };
    },
    startRequestSpan(method, requestId) {
      // A root span: a caller's traceparent is not trusted (it would choose our sampling).
      const span = tracer.startSpan(method, {
        kind: SpanKind.SERVER,
        root: true,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          ...(requestId ? { [tracingAttributes.requestId]: requestId } : {}),
        },
      });
      const active = trace.setSpan(context.active(), span);
      let ended = false;
      return {
        run: (work) => context.with(active, work),
        end(route, status) {
          if (ended) return;
          ended = true;
          span.updateName(`${method} ${route}`);
          span.setAttributes({ [ATTR_HTTP_ROUTE]: route, [ATTR_HTTP_RESPONSE_STATUS_CODE]: status });
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    // Spans the collector did not take by then are lost: that is no failure of the process stopping.
    shutdown: () => provider.shutdown().catch(() => undefined),
  };
}
