// Log lines: the ids of the log context on every line (without one line's fields leaking into
// the next), redaction kept, the pretty format for a terminal, and the request id rules.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { requestIdOf } from '../../api/http/request-id.ts';
import { withLogContext } from '../../lib/log-context.ts';
import { createLogger } from '../../lib/logger.ts';

function capture() {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { destination, text: () => chunks.join('') };
}

describe('createLogger', () => {
  it('adds the log context to every line and keeps secrets redacted', () => {
    const out = capture();
    const logger = createLogger({ destination: out.destination });
    withLogContext({ requestId: 'req-1' }, () => {
      logger.info({ fundingId: 'f-1', accessToken: 'secret-token' }, 'first');
      withLogContext({ workflowId: 'wf-1' }, () => logger.child({ part: 'x' }).info('second'));
      logger.info('third');
    });
    logger.info('outside');
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ requestId: 'req-1', fundingId: 'f-1', accessToken: '[redacted]', msg: 'first' });
    expect(lines[1]).toMatchObject({ requestId: 'req-1', workflowId: 'wf-1', part: 'x', msg: 'second' });
    expect(lines[2]).toEqual(expect.not.objectContaining({ fundingId: expect.anything() }));
    expect(lines[2]).toMatchObject({ requestId: 'req-1', msg: 'third' });
    expect(lines[3]).not.toHaveProperty('requestId');
    expect(out.text()).not.toContain('secret-token');
  });

  it('keeps the wallet error codes and redacts secrets named code by their path', () => {
    const out = capture();
    const logger = createLogger({ destination: out.destination });
    logger.warn({ fundingId: 'f-1', code: 'M133', outcome: 'rejected' }, 'create refused');
    logger.warn({ err: { code: 'TRANSFER_ALREADY_EXECUTED' }, error: { code: '7011' } }, 'nested codes');
    logger.info({ body: { recipient: { type: 'CODE', code: '1234567' } } }, 'a funding request body');
    logger.info({ recipient: { type: 'CODE', code: '7654321' }, cashInCode: '1112223' }, 'a recipient');
    logger.info({ query: { code: 'oauth-authorization-code', state: 's' } }, 'a callback query');
    logger.info({ req: { query: { code: 'oauth-code-2' } }, authorizationCode: 'oauth-code-3' }, 'a request');
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ code: 'M133', outcome: 'rejected' });
    expect(lines[1]).toMatchObject({ err: { code: 'TRANSFER_ALREADY_EXECUTED' }, error: { code: '7011' } });
    expect(lines[2]).toMatchObject({ body: { recipient: { type: 'CODE', code: '[redacted]' } } });
    expect(lines[3]).toMatchObject({ recipient: { code: '[redacted]' }, cashInCode: '[redacted]' });
    expect(lines[4]).toMatchObject({ query: { code: '[redacted]', state: 's' } });
    for (const secret of ['1234567', '7654321', '1112223', 'oauth-authorization-code', 'oauth-code-2', 'oauth-code-3'])
      expect(out.text()).not.toContain(secret);
  });

  it('falls back to JSON lines, saying so, where pino-pretty is not installed (the production image)', () => {
    const out = capture();
    const logger = createLogger({
      destination: out.destination,
      format: 'pretty',
      name: 'api',
      prettyPackage: 'pino-pretty-not-installed',
    });
    logger.info({ accessToken: 'secret-token' }, 'after the fallback');
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ level: 40, service: 'api' });
    expect(String(lines[0]?.msg)).toMatch(/LOG_FORMAT=pretty needs pino-pretty.*logging JSON/);
    expect(lines[1]).toMatchObject({ msg: 'after the fallback', accessToken: '[redacted]' });
  });

  it('writes readable lines in the pretty format, still redacted', () => {
    const out = capture();
    const logger = createLogger({ destination: out.destination, format: 'pretty', name: 'api' });
    withLogContext({ requestId: 'req-2' }, () => logger.info({ refreshToken: 'secret-refresh' }, 'pretty line'));
    const text = out.text();
    expect(text).toContain('pretty line');
    expect(text).toContain('req-2');
    expect(text).not.toContain('secret-refresh');
    expect(() => JSON.parse(text)).toThrow();
  });
});

describe('requestIdOf', () => {
  it('keeps a well-formed incoming id and replaces anything else', () => {
    expect(requestIdOf('abc-123_X.y:z')).toBe('abc-123_X.y:z');
    expect(requestIdOf('0f8fad5b-d9cb-469f-a165-70867728950e')).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
    for (const bad of [undefined, '', 'has space', '<script>', 'a'.repeat(129), '-leading-dash', 'new\nline']) {
      const id = requestIdOf(bad);
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
