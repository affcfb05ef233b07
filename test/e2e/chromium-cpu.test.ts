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
      // A fixed amount of script in the page's renderer: about half a CPU second here, however loaded the machine.
      const sum = await page.evaluate(() => {
        let total = 0;
        for (let index = 0; index < 300_000_000; index += 1) total += index % 7;
        return total;
      });
      expect(sum).toBeGreaterThan(0);
    } finally {
      await closeChromium(browser);
    }
    // A fifth of it at least (a slower machine takes more, not less).
    expect(uncollectedCpuSeconds() - before).toBeGreaterThan(0.1);
  });
});
