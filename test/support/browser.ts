// Headless Debian Chromium for the browser tests (playwright-core drives it; no browser download),
// with the flags this machine's closed network needs, and a phone-sized page.
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A portrait phone: 360 px wide, touch. */
export function phoneContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
}
