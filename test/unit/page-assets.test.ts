// The landing pages' scripts as files (api/embedded/page-assets.ts): each page names its script by
// a content-hashed URL under its nonce, nothing inline; the file is served with JavaScript's type,
// nosniff and an immutable cache lifetime, behind the API's security headers; any other URL there
// falls through.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homePage, landingCsp, loadingPage, messagePage, progressPage } from '../../api/embedded/landing-pages.ts';
import { ASSETS_PATH, pageAssetsRouter, scriptUrl, type PageScript } from '../../api/embedded/page-assets.ts';
import { securityHeaders } from '../../api/http/security-headers.ts';

const nonce = 'bm9uY2Utb2YtdGhpcy10ZXN0';
const pages: Record<PageScript | 'message', string> = {
  loading: loadingPage(nonce),
  home: homePage(nonce, {
    firstName: 'Ana',
    kycStatus: 'KYC1',
    csrfToken: 'csrf',
    withdrawFormKey: 'k1',
    payFormKey: 'k2',
    available: '50.00',
    withdraw: { max: '50.00', min: '1.00', blocked: null },
    activity: [
      {
        kind: 'withdrawal',
        id: '00000000-0000-4000-8000-000000000001',
        status: 'PENDING',
        final: false,
        amount: '5.00',
      },
    ],
  }),
  progress: progressPage(nonce, {
    statusUrl: '/app/withdrawals/00000000-0000-4000-8000-000000000000/status',
    outcome: { tone: 'info', title: 'Working', message: 'Please wait.', final: false },
  }),
  message: messagePage(nonce, { tone: 'error', title: 'Not found', paragraphs: ['Nothing here.'] }),
};
const scripts: PageScript[] = ['loading', 'home', 'progress'];

let server: Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.use(securityHeaders());
  app.use(pageAssetsRouter());
  app.use((_req, res) => res.status(404).send('fell through'));
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the landing pages', () => {
  it.each(scripts)('%s: one <script src> of its own file, under the response nonce; nothing inline', (name) => {
    const html = pages[name];
    expect(html).toContain(`<script nonce="${nonce}" src="${scriptUrl(name)}"></script>`);
    expect(html.match(/<script\b/g)).toHaveLength(1);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  it('a message page runs no script', () => {
    expect(pages.message).not.toContain('<script');
  });

  it('keep a nonce-only script policy: no inline, no self, no eval', () => {
    const policy = landingCsp(nonce);
    expect(policy).not.toMatch(/unsafe-|\*/);
    expect(/script-src ([^;]*)/.exec(policy)?.[1]).toBe(`'nonce-${nonce}'`);
  });
});

describe('the script files', () => {
  it.each(scripts)(
    '%s: a content-hashed URL, served with its type, nosniff and a year of immutable caching',
    async (name) => {
      const url = scriptUrl(name);
      expect(url).toMatch(new RegExp(`^${ASSETS_PATH}/${name}\\.[0-9a-f]{16}\\.js$`));
      const response = await fetch(`${base}${url}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(response.headers.get('cross-origin-resource-policy')).toBe('same-origin');
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(await response.text()).toBe(
        readFileSync(new URL(`../../api/embedded/assets/${name}.js`, import.meta.url), 'utf8'),
      );
      const head = await fetch(`${base}${url}`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    },
  );

  it('serves nothing else there: another hash, the bare name, other files and methods fall through', async () => {
    const home = scriptUrl('home');
    for (const target of [
      home.replace(/\.[0-9a-f]{16}\.js$/, '.0000000000000000.js'),
      `${ASSETS_PATH}/home.js`,
      `${ASSETS_PATH}/page-assets.ts`,
      `${ASSETS_PATH}/..%2Fpage-assets.ts`,
      `${ASSETS_PATH}/`,
    ]) {
      const response = await fetch(`${base}${target}`);
      expect(response.status, target).toBe(404);
      expect(await response.text(), target).toBe('fell through');
    }
    expect((await fetch(`${base}${home}`, { method: 'POST' })).status).toBe(404);
  });

  it('the home and loading scripts take the used session id out of the address', () => {
    for (const name of ['home', 'loading'] as const) {
      expect(readFileSync(new URL(`../../api/embedded/assets/${name}.js`, import.meta.url), 'utf8')).toContain(
        "if (location.search) history.replaceState(null, '', location.pathname);",
      );
    }
  });
});
