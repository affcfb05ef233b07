// The embedded app as a user meets it, in headless Chromium at 360 × 780: the sandbox's wallet-app
// launcher opens the partner tile → the session URL answers → the landing page greets the user →
// deposit → success, one debit in the sandbox ledger → withdraw → approved, one credit. Reloading the
// original landing URL gets the 410 page. A screenshot of the landing page is kept in test-results/.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
let browser: Browser;
let context: BrowserContext;
const resultsDir = path.resolve(import.meta.dirname, '../../test-results');

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 360, height: 780 }, isMobile: true, hasTouch: true });
  await mkdir(resultsDir, { recursive: true });
});
afterAll(async () => {
  await context?.close();
  await closeChromium(browser);
  await stack?.close();
});

interface Ledger {
  transfers: Array<{
    transferId: string;
    status: string;
    recipientUserId: string;
    executions: number;
    amount: unknown;
  }>;
  payments: Array<{ paymentId: string; status: string; userId: string; executions: number; amount: unknown }>;
}

async function ledgerFor(userId: string) {
  const ledger = (await stack.admin.ledger()) as unknown as Ledger;
  return {
    transfers: ledger.transfers.filter((transfer) => transfer.recipientUserId === userId),
    payments: ledger.payments.filter((payment) => payment.userId === userId),
  };
}

async function noHorizontalScroll(page: Page): Promise<void> {
  const widths = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  expect(widths.scroll).toBeLessThanOrEqual(360);
  expect(widths.scroll).toBeLessThanOrEqual(widths.client);
}

/** Waits until the progress card reaches a final state and returns its title and message. */
async function finalOutcome(page: Page): Promise<{ title: string; message: string }> {
  await page.waitForSelector('#progress[data-state="final"]', { timeout: 30_000 });
  return {
    title: (await page.locator('#title').textContent()) ?? '',
    message: (await page.locator('#message').textContent()) ?? '',
  };
}

describe('the embedded app in the wallet app’s web view', () => {
  it('launcher → session URL → greeting → deposit (one debit, the partner balance) → a withdrawal over the balance refused in words → withdraw (one credit); the original landing URL then gets 410', async () => {
    const user = await stack.admin.createUser({
      kycLevel: 'KYC1',
      balance: '1000.00',
      firstName: 'Ana',
      lastName: 'Santos',
    });
    const page = await context.newPage();
    const landingUrls: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${stack.apiBase}/app?sessionId=`)) landingUrls.push(request.url());
    });
    // The pages' scripts are files (api/embedded/assets/), loaded from /app/assets/.
    const scriptsLoaded = new Set<string>();
    page.on('response', (response) => {
      const name = /\/app\/assets\/([a-z]+)\.[0-9a-f]{16}\.js$/.exec(response.url())?.[1];
      if (name && response.status() === 200) scriptsLoaded.add(name);
    });
    // A CSP violation (an inline style or script without the nonce) shows as a console error.
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text()))
        cspViolations.push(message.text());
    });
    const popups: Page[] = [];
    context.on('page', (opened) => {
      if (opened !== page) popups.push(opened);
    });

    await page.goto(`${stack.sandbox.url}/_sandbox/launcher`);
    await page.click(`#open-${user.userId}`);
    await page.waitForURL(`${stack.apiBase}/app`);

    // The session URL answered (the web view followed its session id), and the id is spent.
    expect(landingUrls).toHaveLength(1);
    const landingUrl = landingUrls[0]!;
    const sessionId = new URL(landingUrl).searchParams.get('sessionId')!;
    const session = await stack.database.embeddedSession.findUniqueOrThrow({
      where: { sessionIdHash: hashBearer(sessionId) },
    });
    expect(session.consumedAt).not.toBeNull();

    await expect.poll(() => page.locator('#greeting').textContent(), { timeout: 15_000 }).toBe('Hello, Ana');
    expect(await page.locator('#kyc').textContent()).toContain('KYC1');
    await noHorizontalScroll(page);
    expect(await page.locator('a[target], [target="_blank"], input[type="file"], input[capture]').count()).toBe(0);
    await page.screenshot({ path: path.join(resultsDir, 'landing-page.png'), fullPage: true });

    // Pay 50.00 to the configured merchant.
    await page.fill('#deposit-amount', '50.00');
    await page.click('#deposit-submit');
    await page.waitForURL(/\/app\/deposits\/[0-9a-f-]{36}$/);
    expect(await finalOutcome(page)).toEqual({
      title: 'Deposit successful',
      message: 'PHP 50.00 was added to your balance here.',
    });
    await noHorizontalScroll(page);
    await page.screenshot({ path: path.join(resultsDir, 'payment-result.png') });
    const afterPay = await ledgerFor(user.userId);
    expect(afterPay.payments).toHaveLength(1);
    expect(afterPay.payments[0]).toMatchObject({ status: 'EXECUTED', executions: 1 });
    expect((await stack.admin.user(user.userId)).balance).toBe('950.00');

    // Back to the money page: the deposit is the user's partner balance, shown and offered.
    await page.click('#back');
    await page.waitForURL(`${stack.apiBase}/app`);
    expect(await page.locator('#available').textContent()).toBe('PHP 50.00');
    expect(await page.locator('#withdraw .hint').textContent()).toContain('up to PHP 50.00');
    expect(await page.locator('#activity-list li').first().textContent()).toContain('Deposit from wallet · PHP 50.00');
    await noHorizontalScroll(page);

    // More than the balance: refused in words at the form, nothing started.
    await page.fill('#withdraw-amount', '75.00');
    await page.click('#withdraw-submit');
    await expect
      .poll(() => page.locator('#withdraw-error').textContent())
      .toBe('Your balance does not cover this withdrawal: you have 50.00 PHP available.');
    await noHorizontalScroll(page);
    await page.screenshot({ path: path.join(resultsDir, 'withdraw-refused.png') });
    expect(await stack.database.funding.count({ where: { sourcePartnerUserId: `wallet:${user.profileId}` } })).toBe(0);

    // Withdraw 25.00 to the wallet.
    await page.goto(`${stack.apiBase}/app`);
    await page.fill('#withdraw-amount', '25.00');
    await page.click('#withdraw-submit');
    await page.waitForURL(/\/app\/withdrawals\/[0-9a-f-]{36}$/);
    expect(await finalOutcome(page)).toEqual({
      title: 'Withdrawal approved',
      message: 'PHP 25.00 was added to your wallet.',
    });
    await noHorizontalScroll(page);
    const afterTopUp = await ledgerFor(user.userId);
    expect(afterTopUp.transfers).toHaveLength(1);
    expect(afterTopUp.transfers[0]).toMatchObject({ status: 'APPROVED', executions: 1 });
    expect(afterTopUp.payments).toHaveLength(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('975.00');
    // The money page after the withdrawal: 25.00 left, the withdrawal done (live state).
    await page.click('#back');
    await page.waitForURL(`${stack.apiBase}/app`);
    expect(await page.locator('#available').textContent()).toBe('PHP 25.00');
    await expect
      .poll(() => page.locator('#activity-list li').first().textContent())
      .toContain('Withdrawal to wallet · PHP 25.00Done');
    await page.screenshot({ path: path.join(resultsDir, 'money-page.png'), fullPage: true });
    // The README shows this screenshot (docs/images/money-page.png). The page's headings, labels
    // and buttons are written beside it: when they change, the picture is stale and this fails
    // until `npm run docs:pictures` copies the new screenshot and its text to docs/images/.
    const outline =
      (await page.locator('h1, h2, label, button').allInnerTexts()).map((text) => text.trim()).join('\n') + '\n';
    await writeFile(path.join(resultsDir, 'money-page.txt'), outline);
    const pictured = await readFile(path.resolve(import.meta.dirname, '../../docs/images/money-page.txt'), 'utf8');
    expect(outline, 'the money page changed: run npm run docs:pictures to refresh the README picture').toBe(pictured);

    // Reloading the original landing URL: the session id was used.
    const reload = await page.goto(landingUrl);
    expect(reload?.status()).toBe(410);
    expect(await page.locator('#title').textContent()).toBe('This link was already used');
    expect(await page.content()).not.toContain('Hello, Ana');
    await noHorizontalScroll(page);

    expect(popups).toHaveLength(0);
    expect(cspViolations).toEqual([]);
    expect([...scriptsLoaded]).toEqual(expect.arrayContaining(['home', 'progress']));
    await page.close();
  });
});
