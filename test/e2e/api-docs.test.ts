// The API documentation's viewer in headless Chromium: Swagger UI runs under the /docs page's CSP
// (no violation, no script error), from this origin only, and shows every documented operation.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app.ts';
import { createLogger } from '../../lib/logger.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';

let server: Server;
let base: string;
let browser: Browser;

beforeAll(async () => {
  // The documentation needs no services: the health-only app serves it too.
  const app = createApp({
    logger: createLogger({ level: 'silent' }),
    readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});
afterAll(async () => {
  await closeChromium(browser);
  await new Promise((resolve) => server?.close(resolve));
});

describe('/docs in a browser', () => {
  it('runs Swagger UI under its CSP, loads nothing from elsewhere, and lists every documented operation', async () => {
    const openApi = (await (await fetch(`${base}/docs/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.values(openApi.paths).flatMap((item) =>
      Object.keys(item).filter((key) => key !== 'parameters'),
    );

    const page = await browser.newPage();
    const problems: string[] = [];
    const foreignRequests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(base) && !request.url().startsWith('data:')) foreignRequests.push(request.url());
    });
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) =>
        console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
      );
    });

    await page.goto(`${base}/docs`);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    expect(await page.locator('.opblock').count()).toBe(operations.length);
    // An operation opens with its schemas, and "Try it out" reaches this API.
    await page.locator('#operations-health-liveness .opblock-summary-control').click();
    await page.locator('#operations-health-liveness .try-out__btn').click();
    await page.locator('#operations-health-liveness .execute').click();
    await expect
      .poll(() => page.locator('#operations-health-liveness .live-responses-table').innerText(), { timeout: 10_000 })
      .toContain('"status": "ok"');

    // The ops key goes in through the Authorize dialog (its form never navigates).
    await page.locator('.auth-wrapper .authorize').click();
    const opsKeyForm = page.locator('.modal-ux form').filter({ hasText: 'opsApiKey' });
    await opsKeyForm.locator('input').fill('an-ops-key');
    await opsKeyForm.locator('.authorize').click();
    await expect.poll(() => opsKeyForm.innerText()).toContain('Logout');
    await opsKeyForm.locator('.btn-done').click();

    expect(problems).toEqual([]);
    expect(foreignRequests).toEqual([]);
    await page.close();
  });
});
