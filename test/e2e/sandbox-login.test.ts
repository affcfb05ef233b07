// The sandbox's login pages in headless Chromium at a phone viewport: an existing user logs in
// (password, then one-time password), a new mobile registers, and both reach the redirect URI
// with a code and the same state; the code is then exchanged once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { closeChromium, launchChromium, phoneContext } from '../support/browser.ts';
import { adminOf, authorizeUrl, tokenRequest, type Admin } from '../support/sandbox-harness.ts';

let partner: Server;
let redirectUri: string;
let sandbox: RunningSandbox;
let admin: Admin;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  // Stands in for the partner's redirect URI: a page the browser can land on.
  partner = createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><title>partner</title><h1 id="landed">Back at the partner</h1>');
  });
  await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
  redirectUri = `http://127.0.0.1:${(partner.address() as AddressInfo).port}/connect/callback`;
  sandbox = await startSandbox({ port: 0, registration: { redirectUri } });
  admin = adminOf(sandbox);
  browser = await launchChromium();
});

afterAll(async () => {
  await closeChromium(browser);
  await sandbox?.close();
  partner?.closeAllConnections();
  await new Promise((resolve) => partner?.close(resolve));
});

beforeEach(async () => {
  await admin.reset();
  context = await phoneContext(browser);
  page = await context.newPage();
});

afterEach(async () => {
  await context.close();
});

async function reachCallback(): Promise<URL> {
  await page.waitForURL((url) => url.toString().startsWith(redirectUri));
  await page.locator('#landed').waitFor();
  return new URL(page.url());
}

describe('sandbox login page in Chromium', () => {
  it('logs an existing user in with a pre-filled read-only mobile, password and OTP', async () => {
    const user = await admin.createUser({
      mobile: '09171234567',
      password: 'pass-1234',
      kycLevel: 'KYC1',
      balance: '0',
    });
    await page.goto(authorizeUrl(sandbox, { user_id: '09171234567', state: 'xyz' }));

    const mobile = page.locator('#mobile');
    expect(await mobile.inputValue()).toBe('09171234567');
    expect(await mobile.getAttribute('readonly')).not.toBeNull();
    // The page fits the phone: no horizontal scrolling.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);

    await page.fill('#password', 'wrong-password');
    await page.click('#submit');
    expect(await page.locator('#error').textContent()).toContain('Wrong password');
    await page.fill('#password', 'pass-1234');
    await page.click('#submit');

    await page.waitForSelector('#otp');
    expect(await page.locator('#otp-hint').textContent()).toContain('123456');
    await page.fill('#otp', '123456');
    await page.click('#submit');

    const callback = await reachCallback();
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    expect(callback.searchParams.get('state')).toBe('xyz');
    expect(callback.searchParams.get('userId')).toBe('*******4567');
    expect(callback.searchParams.get('profileId')).toBe(user.profileId);
    const code = callback.searchParams.get('code');
    expect(code).toEqual(expect.any(String));

    const first = await tokenRequest(sandbox, {
      grant_type: 'authorization_code',
      code: code ?? '',
      redirect_uri: redirectUri,
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ token_type: 'Bearer', expires_in: '3600', access_token: expect.any(String) });
    const second = await tokenRequest(sandbox, {
      grant_type: 'authorization_code',
      code: code ?? '',
      redirect_uri: redirectUri,
    });
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');
  });

  it('registers a new mobile through the registration form and returns a code', async () => {
    await page.goto(authorizeUrl(sandbox, { user_id: '09981112222', state: 'new-user' }));
    await page.waitForSelector('#register-form');
    const mobile = page.locator('#mobile');
    expect(await mobile.inputValue()).toBe('09981112222');
    expect(await mobile.getAttribute('readonly')).not.toBeNull();
    await page.fill('#password', 'chosen-pass');
    await page.click('#submit');
    await page.fill('#otp', '123456');
    await page.click('#submit');

    const callback = await reachCallback();
    expect(callback.searchParams.get('state')).toBe('new-user');
    expect(callback.searchParams.get('userId')).toBe('*******2222');
    const code = callback.searchParams.get('code') ?? '';
    const tokens = await tokenRequest(sandbox, { grant_type: 'authorization_code', code, redirect_uri: redirectUri });
    expect(tokens.status).toBe(200);
    const users = (await admin.call<{ users: { mobile: string; kycLevel: string }[] }>('GET', '/users')).body.users;
    expect(users).toEqual([expect.objectContaining({ mobile: '09981112222', kycLevel: 'KYC0' })]);
  });

  it('sends the user back with access_denied and the state on cancel', async () => {
    await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    await page.goto(authorizeUrl(sandbox, { user_id: '09171234567', state: 'cancel-me' }));
    await page.click('#cancel');
    const callback = await reachCallback();
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe('cancel-me');
    expect(callback.searchParams.get('code')).toBeNull();
  });
});
