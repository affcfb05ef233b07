// axe on a page in the browser tests: its serious and critical findings, one line each (rule,
// impact, where). Only violations are gathered (axe's own advice for speed); every rule axe runs
// by default runs. In axe's legacy mode: axe.run in the page itself, where the default mode merges
// the frames' results in a blank page it opens and injects axe into too, every time (the console's
// pages have no frames). The console's every-page test took 25 s alone instead of 15, the file 101
// CPU s instead of 75. test/e2e/axe-findings.test.ts proves the findings still come.
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';

export async function seriousAxeFindings(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page })
    .setLegacyMode()
    .options({ resultTypes: ['violations'] })
    .analyze();
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join('; ')}`,
    );
}
