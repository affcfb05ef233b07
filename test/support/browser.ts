// Headless Debian Chromium for the browser tests (playwright-core drives it; no browser download),
// with the flags this machine's closed network needs, and a phone-sized page. Its headless shell
// (Debian's chromium-headless-shell, what Playwright runs headless) when installed: the console's
// sign-in file took 25 CPU s with it against 48 with the full browser's headless mode.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

const headlessShell = '/usr/bin/chromium-headless-shell';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? (existsSync(headlessShell) ? headlessShell : '/usr/bin/chromium'),
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
