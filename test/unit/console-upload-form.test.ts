// A console form with a file (multipart/form-data) is checked for the session's CSRF token by the
// route that reads it (api/console/upload-form.ts), since the router's check cannot read such a
// body: the router lets a multipart request through only to the routes named as reading their own
// form, and only from our origin; the reader hands the file on only after a valid `_csrf` field
// that came before it. Everything else fails closed. On a small Express app with a session set by
// hand, the console's own middleware in front.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireCsrf } from '../../api/console/console-auth.ts';
import { readUploadForm } from '../../api/console/upload-form.ts';

const token = 'csrf-token-of-the-session-0123456789';
let server: Server;
let base: string;
/** What each form's `onFile` was handed (the fields before the file, the file's text). */
const handedOn: Array<{ fields: Record<string, string>; text: string; truncated: boolean }> = [];

beforeAll(async () => {
  const app = express();
  // A live session, as readConsoleSession would set it.
  app.use((_req, res, next) => {
    res.locals.consoleSession = {
      csrfToken: token,
      personName: 'Maria Santos (oidc:m)',
      scopes: new Set(['read', 'fund']),
      via: 'oidc',
    };
    next();
  });
  const area = express.Router();
  area.use(express.urlencoded({ extended: false }));
  area.use(requireCsrf(undefined, ['/console/upload']));
  area.post('/upload', async (req, res) => {
    const outcome = await readUploadForm(req, {
      csrfToken: token,
      fileField: 'file',
      limits: { fileBytes: 64, fields: 4, fieldBytes: 100 },
      onFile: async (fields, file) => {
        const chunks: Buffer[] = [];
        for await (const chunk of file.stream) chunks.push(chunk as Buffer);
        const seen = {
          fields: Object.fromEntries(fields),
          text: Buffer.concat(chunks).toString('utf8'),
          truncated: file.stream.truncated === true,
        };
        handedOn.push(seen);
        return seen;
      },
    });
    res.status(outcome.kind === 'csrf' ? 403 : outcome.kind === 'read' ? 200 : 400).json({ kind: outcome.kind });
  });
  area.post('/other', (_req, res) => {
    res.json({ kind: 'ran' });
  });
  app.use('/console', area);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function form(parts: Array<[string, string] | ['file', string, string]>): FormData {
  const data = new FormData();
  for (const part of parts) {
    if (part.length === 3) data.append(part[0], new Blob([part[1]], { type: 'text/csv' }), part[2]);
    else data.append(part[0], part[1]);
  }
  return data;
}

async function post(path: string, body: FormData, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, { method: 'POST', body, headers });
  return { status: response.status, body: (await response.text()).slice(0, 200) };
}

describe('a console form with a file', () => {
  it('hands the file on after a valid CSRF field that came before it, with the fields before it', async () => {
    const before = handedOn.length;
    const answer = await post(
      '/console/upload',
      form([
        ['_csrf', token],
        ['name', 'May'],
        ['file', 'reference\n', 'a.csv'],
        ['late', 'after the file'],
      ]),
    );
    expect(answer).toMatchObject({ status: 200 });
    expect(handedOn.slice(before)).toEqual([
      { fields: { _csrf: token, name: 'May' }, text: 'reference\n', truncated: false },
    ]);
  });

  it('refuses a form without the token, with a wrong one, or with it only after the file: the file is never handed on', async () => {
    const before = handedOn.length;
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['name', 'May'],
            ['file', 'x', 'a.csv'],
          ]),
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['_csrf', `${token}x`],
            ['file', 'x', 'a.csv'],
          ]),
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['file', 'x', 'a.csv'],
            ['_csrf', token],
          ]),
        )
      ).status,
    ).toBe(403);
    // A second token cannot replace a wrong first one.
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['_csrf', 'wrong'],
            ['_csrf', token],
            ['file', 'x', 'a.csv'],
          ]),
        )
      ).status,
    ).toBe(403);
    // Without a file at all, still refused without the token.
    expect((await post('/console/upload', form([['name', 'May']]))).status).toBe(403);
    expect(handedOn.length).toBe(before);
  });

  it('is refused by the router anywhere but a route that reads its own form, and from another origin', async () => {
    const other = await post(
      '/console/other',
      form([
        ['_csrf', token],
        ['file', 'x', 'a.csv'],
      ]),
    );
    expect(other.status).toBe(403);
    expect(other.body).not.toContain('ran');
    const before = handedOn.length;
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['_csrf', token],
            ['file', 'x', 'a.csv'],
          ]),
          { origin: 'https://evil.example' },
        )
      ).status,
    ).toBe(403);
    expect(handedOn.length).toBe(before);
    // A spelling the route list does not name is not let through either.
    expect(
      (
        await post(
          '/console/upload/',
          form([
            ['_csrf', token],
            ['file', 'x', 'a.csv'],
          ]),
        )
      ).status,
    ).toBe(403);
  });

  it('bounds the form: a file past its limit is cut and says so; too many fields are refused; no file is told apart', async () => {
    const before = handedOn.length;
    expect(
      (
        await post(
          '/console/upload',
          form([
            ['_csrf', token],
            ['file', 'y'.repeat(200), 'big.csv'],
          ]),
        )
      ).status,
    ).toBe(200);
    expect(handedOn.slice(before)).toEqual([{ fields: { _csrf: token }, text: 'y'.repeat(64), truncated: true }]);
    const many = await post(
      '/console/upload',
      form([
        ['_csrf', token],
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
        ['d', '4'],
        ['file', 'x', 'a.csv'],
      ]),
    );
    expect(many).toMatchObject({ status: 400, body: expect.stringContaining('malformed') });
    const empty = await post(
      '/console/upload',
      form([
        ['_csrf', token],
        ['file', '', ''],
      ]),
    );
    expect(empty).toMatchObject({ status: 400, body: expect.stringContaining('no-file') });
    expect(handedOn.length).toBe(before + 1);
  });
});
