// How traces leave a process: the OTLP/HTTP exporter as startTracing builds it, against a
// collector that drops a connection before answering (an idle keep-alive connection it closes as
// a batch is sent, a restart). The batch is sent again, as the OTLP specification asks; the
// exporter's release alone drops it, and a trace lost its wallet call's span that way.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../lib/tracing.ts';

/** A collector that answers `plan` in turn, one per POST (then 200): `drop` closes the connection unanswered. */
async function collector(plan: Array<'drop' | number>) {
  const received: string[] = [];
  const answers: Array<'drop' | number> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = plan.shift() ?? 200;
      answers.push(answer);
      if (answer === 'drop') return void req.socket.destroy();
      if (answer === 200) received.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(answer, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    received,
    answers,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let tracing: Tracing | undefined;
let stopCollector: (() => Promise<void>) | undefined;
afterEach(async () => {
  await tracing?.shutdown();
  await stopCollector?.();
  tracing = undefined;
  // startTracing registers its provider globally: each test starts its own.
  trace.disable();
  context.disable();
  propagation.disable();
});

/** One wallet call's span through a fresh tracing to the collector, flushed by shutdown. */
async function traceOneWalletCall(url: string, requestReferenceNo: string) {
  tracing = startTracing({ url, headers: {}, serviceName: undefined }, { defaultServiceName: 'walletflow-worker' });
  tracing.walletCallSpan({
    requestReferenceNo,
    service: 'transfers',
    operation: 'transfers.create',
    method: 'POST',
    path: '/v1/transfers',
  })({ httpStatus: 200, outcome: 'ok', errorCode: null });
  await tracing.shutdown();
  tracing = undefined;
}

describe('exporting spans', () => {
  it('sends a batch again when the collector drops the connection before answering, so no span is lost', async () => {
    const otlp = await collector(['drop', 'drop']);
    stopCollector = otlp.close;
    await traceOneWalletCall(otlp.url, 'ref-dropped-twice');
    expect(otlp.answers).toEqual(['drop', 'drop', 200]);
    expect(otlp.received).toHaveLength(1);
    expect(otlp.received[0]).toContain('ref-dropped-twice');
  });

  it('does not send again a batch the collector answered with a refusal, and stops all the same', async () => {
    const otlp = await collector([400]);
    stopCollector = otlp.close;
    await traceOneWalletCall(otlp.url, 'ref-refused');
    expect(otlp.answers).toEqual([400]);
    expect(otlp.received).toEqual([]);
  });
});
