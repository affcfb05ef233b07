// The per-file CPU figures (test/cpu-per-file.ts) hold what a file's Chromium did: closeChromium counts its renderers,
// which outlive the browser process and which no process of the test waits for.
import { describe, expect, it } from 'vitest';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { uncollectedCpuSeconds } from '../support/process-cpu.ts';

describe('closing Chromium', () => {
  it("counts the CPU its page's renderer used", async () => {
    const browser = await launchChromium();
    const before = uncollectedCpuSeconds();
    try {
      const page = await browser.newPage();
      // About half a CPU second of script in the page's renderer.
      const started = Date.now();
      await page.evaluate(() => {
        const until = Date.now() + 500;
        while (Date.now() < until);
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    } finally {
      await closeChromium(browser);
    }
    // At least most of it: a loaded machine gives the renderer less than all of its half second.
    expect(uncollectedCpuSeconds() - before).toBeGreaterThan(0.1);
  });
});
