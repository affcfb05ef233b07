// The axe routine the console's page tests rely on (test/support/axe.ts) reports what it should: a
// page with serious and critical faults gets one line for each, and a clean page none. Without it, an
// axe that ran nothing would pass every "no serious or critical axe finding" test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { seriousAxeFindings } from '../support/axe.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await closeChromium(browser);
});

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><title>axe check</title></head><body><main>${body}</main></body></html>`;

describe('the axe findings of a page', () => {
  it('names each serious or critical fault (an image without a text, a nameless button, faint text), and nothing on a clean page', async () => {
    const tab = await browser.newPage();
    try {
      await tab.setContent(
        page(
          '<h1>Fundings</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">' +
            '<button></button><p style="color:#ccc;background:#fff">Settled</p>',
        ),
      );
      const findings = await seriousAxeFindings(tab);
      expect(findings.map((finding) => finding.split(' ')[0]).sort()).toEqual([
        'button-name',
        'color-contrast',
        'image-alt',
      ]);
      expect(findings.find((finding) => finding.startsWith('image-alt'))).toBe('image-alt (critical): img');

      await tab.setContent(page('<h1>Fundings</h1><button>Approve</button><p>Settled</p>'));
      expect(await seriousAxeFindings(tab)).toEqual([]);
    } finally {
      await tab.close();
    }
  });
});
