// Headless Debian Chromium for the browser tests (playwright-core drives it; no browser download),
// with the flags this machine's closed network needs, and a phone-sized page. Its headless shell
// (Debian's chromium-headless-shell, what Playwright runs headless) when installed: the console's
// sign-in file took 25 CPU s with it against 48 with the full browser's headless mode. A file closes its browser with
// closeChromium, which counts the CPU of the browser's processes that nobody waits for (below).
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import type { ProcessStat } from '../../harness/process-usage.ts';
import { addUncollectedCpu, allProcesses, commandLine } from './process-cpu.ts';

const headlessShell = '/usr/bin/chromium-headless-shell';

/** Each browser's process group: Playwright starts the browser in a group of its own. */
const processGroups = new WeakMap<Browser, number>();

export async function launchChromium(): Promise<Browser> {
  const childrenBefore = new Set(childrenOfThisProcess().map((child) => child.pid));
  const browser = await chromium.launch({
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
      // One renderer for the pages of every origin a test opens (the API, the identity provider, the sandbox's login),
      // not a process per site: the console's browser files took 62 CPU s with these against 67 to 71 without.
      '--disable-site-isolation-trials',
      '--disable-features=site-per-process,IsolateOrigins',
    ],
  });
  const started = childrenOfThisProcess().find(
    (child) => !childrenBefore.has(child.pid) && /chrom/.test(commandLine(child.pid)),
  );
  if (started) processGroups.set(browser, started.pgid);
  return browser;
}

/**
 * Closes the browser, first counting for the file's CPU figure (test/cpu-per-file.ts) what its zygotes and the
 * renderers and GPU process they started have used: the browser process exits before its zygotes, so they end as
 * orphans that neither it nor this process waits for, and their CPU (most of a page's: layout, scripts, axe) would not
 * be in this process's figure. The browser's other children, and the browser itself, are waited for and counted so.
 */
export async function closeChromium(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  const group = processGroups.get(browser);
  if (group !== undefined) {
    const members = allProcesses().filter((stat) => stat.pgid === group);
    const zygotes = new Set(
      members.filter((stat) => /--type=zygote/.test(commandLine(stat.pid))).map((stat) => stat.pid),
    );
    // A zygote's figure holds the renderers it waited for; its live children are counted on their own.
    const uncollected = members.filter((stat) => zygotes.has(stat.pid) || zygotes.has(stat.ppid));
    addUncollectedCpu(uncollected.reduce((sum, stat) => sum + stat.cpuSeconds + stat.childrenCpuSeconds, 0));
  }
  await browser.close();
}

function childrenOfThisProcess(): ProcessStat[] {
  return allProcesses().filter((stat) => stat.ppid === process.pid);
}

/** A portrait phone: 360 px wide, touch. */
export function phoneContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
}
