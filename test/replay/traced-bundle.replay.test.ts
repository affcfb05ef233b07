// Turning tracing on never breaks a running workflow: every stored history (recorded without
// tracing, current and archived, of every workflow) replays on the traced workflow bundle, the one
// a worker with OTEL_EXPORTER_OTLP_ENDPOINT runs (OpenTelemetry's workflow interceptors inside).
// The other way round, a history recorded with tracing on replaying on the plain bundle, is in
// test/integration/tracing.test.ts.
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowBundleFile } from '../../harness/workflow-bundle-file.ts';
import { installQuietReplayRuntime, listStoredHistories, replayStored } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = listStoredHistories();
let dir: string;
let tracedBundle: string;
let tracedCode: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'walletflow-traced-replay-'));
  tracedBundle = path.join(dir, 'workflow-bundle-traced.js');
  await copyFile(await workflowBundleFile({ tracing: true }), tracedBundle);
  tracedCode = await readFile(tracedBundle, 'utf8');
}, 180_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the traced workflow bundle', () => {
  it('carries the workflow interceptors, which the plain bundle does not (tracing off runs no tracing code)', async () => {
    // The trace context header the interceptors write and read.
    expect(tracedCode).toContain('_tracer-data');
    expect(await readFile(inject('workflowBundlePath'), 'utf8')).not.toContain('_tracer-data');
  });

  it('replays every stored history (tracing turned on under running workflows)', async () => {
    const results = await replayStored({ workflowBundle: { codePath: tracedBundle } }, stored);
    expect(results.map((result) => result.workflowId)).toEqual(stored);
    expect(
      results.filter((result) => result.error).map((result) => `${result.workflowId}: ${String(result.error)}`),
    ).toEqual([]);
  }, 300_000);
});
