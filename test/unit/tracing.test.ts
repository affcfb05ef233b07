// Tracing's configuration (OpenTelemetry's standard variable names, off by default) and its off
// path: nothing of OpenTelemetry is imported anywhere but lib/tracing.ts, which the API and the
// worker load with import() only when tracing is on.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.ts';
import { tracedBundlePath } from '../../lib/tracing-bundle.ts';
import { problemsOf } from '../support/config-problems.ts';

const root = path.resolve(import.meta.dirname, '../..');

describe('tracing configuration', () => {
  it('is off by default', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
  });

  it('is on with a collector endpoint: traces go to its /v1/traces, or to the traces endpoint as given', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: undefined,
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/traces',
        OTEL_SERVICE_NAME: 'walletflow-eu',
      }).tracing,
    ).toEqual({ url: 'https://traces.example/otlp/traces', headers: {}, serviceName: 'walletflow-eu' });
  });

  it('stays off when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', () => {
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    ).toBeUndefined();
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing,
    ).toBeUndefined();
    expect(problemsOf({ OTEL_TRACES_EXPORTER: 'zipkin' })[0]).toMatch(/^OTEL_TRACES_EXPORTER: /);
  });

  it('reads the collector headers (percent-encoded, from a file too) and never shows a value in an error', () => {
    const headers = 'Authorization=Bearer%20s3cr3t-collector-key,x-tenant=partner-1';
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS: headers }).tracing
        ?.headers,
    ).toEqual({
      authorization: 'Bearer s3cr3t-collector-key',
      'x-tenant': 'partner-1',
    });
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'walletflow-otlp-')), 'headers');
    writeFileSync(file, `${headers}\n`);
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS_FILE: file })
        .tracing?.headers,
    ).toMatchObject({ 'x-tenant': 'partner-1' });
    const problems = problemsOf({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization s3cr3t-collector-key' });
    expect(problems).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_HEADERS: entry 1: must be key=value pairs/)]);
    expect(problems.join('\n')).not.toContain('s3cr3t');
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })[0]).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT: /);
  });

  it('finds the traced twin of a prebuilt workflow bundle beside it', () => {
    expect(tracedBundlePath('/app/dist/workflow-bundle.js')).toBe('/app/dist/workflow-bundle-traced.js');
  });
});

describe('with tracing off', () => {
  const sources = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file && !file.startsWith('node_modules/') && !file.startsWith('test/'));

  it('no module but lib/tracing.ts imports OpenTelemetry or its Temporal interceptors', () => {
    const importing = sources.filter((file) =>
      /\bfrom\s+['"]@(opentelemetry\/|temporalio\/interceptors-opentelemetry)|import\(\s*['"]@(opentelemetry\/|temporalio\/interceptors-opentelemetry)/.test(
        readFileSync(path.join(root, file), 'utf8').replace(/import\s+type\s[^;]*;/g, ''),
      ),
    );
    expect(importing).toEqual(['lib/tracing.ts']);
  });

  it('lib/tracing.ts is loaded only by import(), in the API and the worker, when tracing is configured', () => {
    const loaders = sources.filter((file) =>
      /tracing\.ts['"]/.test(readFileSync(path.join(root, file), 'utf8').replace(/import\s+type\s[^;]*;/g, '')),
    );
    expect(loaders.sort()).toEqual(['api/main.ts', 'worker/main.ts']);
    for (const file of loaders) {
      const source = readFileSync(path.join(root, file), 'utf8');
      expect(source, file).toMatch(/config\.tracing \? \(await import\('\.\.\/lib\/tracing\.ts'\)\)\.startTracing\(/);
      expect(source, file).not.toMatch(/^import [^;]*lib\/tracing\.ts'/m);
    }
  });
});
