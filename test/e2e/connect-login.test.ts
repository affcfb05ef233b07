// Standalone login as a user does it, in headless Chromium at a phone viewport: the partner's
// login URL (POST /ops/links/login-urls) → /connect/start → the sandbox's login page (mobile pre-filled, password,
// one-time password) →
// /connect/callback → the success page; the link then exists with its tokens.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeChromium, launchChromium, phoneContext } from '../support/browser.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
let browser: Browser;

beforeAll(async () => {
  stack = await startPartnerStack();
  browser = await launchChromium();
});
afterAll(async () => {
  await closeChromium(browser);
  await stack?.close();
});

describe('standalone login in a browser', () => {
  it('goes from /connect/start through the wallet login to the success page and stores the link', async () => {
    const user = await stack.admin.createUser({ mobile: '09170000001', password: 'browser-pass', kycLevel: 'KYC1' });
    const context = await phoneContext(browser);
    const page = await context.newPage();
    await page.goto(await stack.mintLoginUrl('browser-user-1', user.mobile));

    expect(page.url().startsWith(`${stack.sandbox.connectUrl}/authorize`)).toBe(true);
    expect(await page.locator('#mobile').inputValue()).toBe(user.mobile);
    await page.fill('#password', 'browser-pass');
    await page.click('#submit');
    await page.waitForSelector('#otp');
    await page.fill('#otp', '123456');
    await page.click('#submit');

    await page.waitForURL((url) => url.toString().startsWith(`${stack.apiBase}/connect/callback`));
    expect(await page.locator('#title').textContent()).toBe('Your wallet is linked');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);

    const link = await stack.database.link.findFirstOrThrow({
      where: { partnerUserId: 'browser-user-1' },
      include: { tokens: true },
    });
    expect(link).toMatchObject({ profileId: user.profileId, kind: 'STANDALONE', status: 'ACTIVE' });
    expect(link.tokens?.version).toBe(1);
    const tokens = await stack.tokens.read(stack.database, link.id);
    expect(Buffer.from(link.tokens!.accessTokenEncrypted).includes(Buffer.from(tokens!.accessToken))).toBe(false);
    await context.close();
  });
});
