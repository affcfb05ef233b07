// The console's batches (contract-decisions sections 14 and 15) in headless Chromium,
// against a real OpenID Connect provider and the real stack (PostgreSQL, Temporal, the sandbox
// wallet): a maker uploads a CSV, reads the report of its bad row, fixes it and submits; a checker
// approves it (the maker never can, in the console or through the API); both watch its progress
// pushed to their pages until it completes; its report holds every item once. The keyboard alone
// is enough; a form without the session's CSRF token, or from a person without the scope, is
// refused and stores nothing; the pages fit a phone and a desktop and pass axe.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConsoleRoles } from '../../lib/console-roles.ts';
import { startIdentityProvider, type RunningIdentityProvider } from '../../sandbox/identity-provider.ts';
import { seriousAxeFindings } from '../support/axe.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { refuseNextInsert } from '../support/refuse-once.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';

let browser: Browser;
let idp: RunningIdentityProvider;
let stack: PartnerStack;
const clientSecret = randomBytes(24).toString('base64url');

const MAKER = 'Maria Santos (oidc:staff-maria)';
const CHECKER = 'Jose Reyes (oidc:staff-jose)';
const staff = [
  { username: 'maria', password: 'maria-pass', name: 'Maria Santos', groups: ['makers'] },
  { username: 'jose', password: 'jose-pass', name: 'Jose Reyes', groups: ['checkers'] },
  { username: 'ana', password: 'ana-pass', name: 'Ana Cruz', groups: ['readers'] },
  // Both scopes: she may approve batches, never one she uploaded.
  { username: 'lea', password: 'lea-pass', name: 'Lea Gomez', groups: ['makers', 'checkers'] },
  // admin: a user's balance may pay others' wallets (then only the money can refuse it).
  { username: 'rey', password: 'rey-pass', name: 'Rey Admin', groups: ['makers', 'admins'] },
];
const contexts = new Map<string, BrowserContext>();

beforeAll(async () => {
  browser = await launchChromium();
  stack = await startPartnerStack({
    // Every batch of 1.00 or more waits for a second person. Uploads at once may hold 64 KiB (about 250 items): a file
    // of 1,000 is refused for now, as a full budget is.
    batches: { approvalThreshold: 1000n, maxInFlight: 4, uploadBudgetBytes: 64 * 1024 },
    console: async (apiBase) => {
      idp = await startIdentityProvider({
        clients: [{ clientId: 'walletflow-console', clientSecret, redirectUris: [`${apiBase}/console/oidc/callback`] }],
        staff,
      });
      return {
        oidc: {
          issuer: idp.issuer,
          clientId: 'walletflow-console',
          clientSecret,
          roles: parseConsoleRoles(['makers=read+fund', 'checkers=read+approve', 'readers=read', 'admins=admin']),
          groupsClaim: 'groups',
        },
        idleMinutes: 15,
        sessionHours: 8,
        temporalUiUrl: undefined,
      };
    },
  });
}, 90_000);

afterAll(async () => {
  await closeChromium(browser);
  await stack?.close();
  await idp?.close();
});

/** A browser signed in as the staff member (once per test file), at 1280 px. */
async function signedIn(username: string): Promise<BrowserContext> {
  const known = contexts.get(username);
  if (known) return known;
  const member = staff.find((each) => each.username === username)!;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${stack.apiBase}/console`);
  await page.getByRole('link', { name: /Sign in with/ }).click();
  await page.getByLabel('User name').fill(member.username);
  await page.getByLabel('Password').fill(member.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${stack.apiBase}/console`);
  await page.close();
  contexts.set(username, context);
  return context;
}

async function pageAs(username: string, path: string): Promise<Page> {
  const page = await (await signedIn(username)).newPage();
  await page.goto(`${stack.apiBase}${path}`);
  return page;
}

const csvOf = (rows: Array<[string, string, string]>) =>
  `reference,recipient_type,recipient,amount\n${rows.map(([reference, code, amount]) => `${reference},CODE,${code},${amount}`).join('\n')}\n`;
const csvFile = (text: string, name = 'batch.csv') => ({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });

/** Fresh sandbox users and a real cash-in code of each. */
async function cashInCodes(count: number): Promise<string[]> {
  const users = await Promise.all(
    Array.from({ length: count }, () => stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' })),
  );
  return Promise.all(users.map(async (user) => (await stack.admin.cashInCode(user.userId)).code));
}

/** Uploads through the form (the mouse's way); the page after the answer. */
async function upload(page: Page, name: string, csv: string): Promise<void> {
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('CSV file').setInputFiles(csvFile(csv));
  await page.getByRole('button', { name: 'Check and submit' }).click();
  await page.waitForLoadState();
}

const batchIdOf = (page: Page) => /\/console\/batches\/([0-9a-f-]{36})/.exec(page.url())?.[1] ?? '';

/** Tab (forwards) until `target` has the focus; fails if the keyboard never gets there. */
async function tabTo(page: Page, target: Locator, most = 80): Promise<void> {
  for (let presses = 0; presses < most; presses += 1) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((element) => element === document.activeElement)) return;
  }
  throw new Error(`not reachable with Tab: ${String(target)}`);
}

/** The keyboard's way past the header: Tab to the skip link, Enter; the next Tab is in the page's own content. */
async function skipToMain(page: Page): Promise<void> {
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to the page');
  await page.keyboard.press('Enter');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
}

/** A form posted by the page's own script, as a forger in the page would: its answer's status and where it ended. */
async function postForm(
  page: Page,
  path: string,
  parts: Array<[string, string] | [string, string, string]>,
): Promise<{ status: number; url: string; text: string }> {
  return page.evaluate(
    async ({ path, parts }) => {
      const form = new FormData();
      for (const part of parts) {
        if (part.length === 3) form.append(part[0], new Blob([part[1]], { type: 'text/csv' }), part[2]);
        else form.append(part[0], part[1]);
      }
      const response = await fetch(path, { method: 'POST', body: form });
      return { status: response.status, url: response.url, text: await response.text() };
    },
    { path, parts },
  );
}

async function postUrlencoded(page: Page, path: string, fields: Record<string, string>): Promise<number> {
  return page.evaluate(
    async ({ path, fields }) =>
      (
        await fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(fields).toString(),
        })
      ).status,
    { path, fields },
  );
}

const csrfOf = async (page: Page) => (await page.locator('header input[name=_csrf]').getAttribute('value')) ?? '';

describe('the console’s batches, keyboard only', () => {
  it('uploads and submits with Tab, typing, Space and Enter; approve, pause, resume and cancel are reached by keyboard', async () => {
    const codes = await cashInCodes(2);
    const maker = await pageAs('maria', '/console/batches');
    await skipToMain(maker);
    await tabTo(maker, maker.getByLabel('Name', { exact: true }));
    await maker.keyboard.type('Keyboard rewards');
    await tabTo(maker, maker.getByLabel('CSV file'));
    // The file chooser itself is the system's: the focused input is given the file.
    await maker.locator(':focus').setInputFiles(
      csvFile(
        csvOf([
          ['k-1', codes[0]!, '5.00'],
          ['k-2', codes[1]!, '5.00'],
        ]),
      ),
    );
    await tabTo(maker, maker.getByRole('button', { name: 'Check and submit' }));
    await maker.keyboard.press('Enter');
    await maker.waitForURL(/\/console\/batches\/[0-9a-f-]{36}\?did=created&proof=[\w-]+$/);
    const batchId = batchIdOf(maker);
    expect(await maker.locator('.notice.ok').innerText()).toContain('It waits for another person’s approval');

    const checker = await pageAs('jose', `/console/batches/${batchId}`);
    await skipToMain(checker);
    await tabTo(checker, checker.getByRole('button', { name: 'Approve' }));
    await checker.keyboard.press('Space');
    await checker.waitForURL(/\?did=approve&proof=[\w-]+$/);
    expect(await checker.locator('.notice.ok').innerText()).toContain('You approved the batch');

    // No worker runs yet in this file: the batch stays RUNNING until the maker's keys move it.
    await maker.goto(`${stack.apiBase}/console/batches/${batchId}`);
    await skipToMain(maker);
    await tabTo(maker, maker.getByRole('button', { name: 'Pause' }));
    await maker.keyboard.press('Enter');
    await maker.waitForURL(/\?did=pause&proof=[\w-]+$/);
    await skipToMain(maker);
    await tabTo(maker, maker.getByRole('button', { name: 'Resume' }));
    await maker.keyboard.press('Space');
    await maker.waitForURL(/\?did=resume&proof=[\w-]+$/);
    maker.once('dialog', (dialog) => void dialog.accept());
    await skipToMain(maker);
    await tabTo(maker, maker.getByRole('button', { name: 'Cancel the batch' }));
    await maker.keyboard.press('Enter');
    await maker.waitForURL(/\?did=cancel&proof=[\w-]+$/);
    expect(await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).toMatchObject({
      state: 'CANCELLED',
      createdBy: MAKER,
      approvedBy: CHECKER,
      pausedBy: MAKER,
      // Who resumed it, stored with the move as every other move's person is. Before: nobody, only the audit's row
      // written after the answer (lost with the process).
      resumedBy: MAKER,
      cancelledBy: MAKER,
    });
    await maker.close();
    await checker.close();
  });
});

describe('the console’s batches refuse what a person may not do', () => {
  it('draws a form refused for now (the upload budget full) again with the idempotency key it was sent with', async () => {
    const maker = await pageAs('maria', '/console/batches');
    const key = () => maker.locator('input[name="idempotencyKey"]').inputValue();
    const sent = await key();
    const before = await stack.database.fundingBatch.count();
    const rows = Array.from({ length: 1000 }, (_, index): [string, string, string] => [
      `big-${index}`,
      '1234567',
      '1.00',
    ]);
    await upload(maker, 'Too big for now', csvOf(rows));
    expect(await maker.getByRole('alert').innerText()).toContain('walletflow is storing other batches right now');
    expect(await stack.database.fundingBatch.count()).toBe(before);
    // Before: a fresh key, so the person's upload again, as the page asks, made a second batch beside a first send
    // still being stored (a double click, an answer lost and the page reloaded).
    expect(await key()).toBe(sent);
    await maker.close();
  });

  it('says a batch whose store was refused a connection may have been stored (the page cannot tell), and the same form then stores it once', async () => {
    const maker = await pageAs('maria', '/console/batches');
    const key = () => maker.locator('input[name="idempotencyKey"]').inputValue();
    const sent = await key();
    const before = await stack.database.fundingBatch.count();
    // The next batch's store is refused, once, as PostgreSQL refuses a connection past its limit.
    const allow = await refuseNextInsert(stack.database, 'funding_batch');
    try {
      await upload(maker, 'Refused once', csvOf([['once-1', '1234567', '2.00']]));
      const said = await maker.getByRole('alert').innerText();
      // Before: "nothing was stored", though a refused connection may come after the store (its page's read).
      expect(said).toContain('may have been stored');
      expect(said).not.toContain('nothing was stored');
      expect(await key()).toBe(sent);
      // The same form again: stored, once.
      await upload(maker, 'Refused once', csvOf([['once-1', '1234567', '2.00']]));
      expect(maker.url()).toMatch(/\/console\/batches\/[0-9a-f-]{36}\?did=created&proof=[\w-]+$/);
      expect(await stack.database.fundingBatch.count()).toBe(before + 1);
    } finally {
      await allow();
      await maker.close();
    }
  });

  it('refuses a form with a file but without the CSRF token before it (403), and stores nothing', async () => {
    const maker = await pageAs('maria', '/console/batches');
    const csrf = await csrfOf(maker);
    const csv = csvOf([['f-1', '1234567', '5.00']]);
    const before = await stack.database.fundingBatch.count();
    const without = await postForm(maker, '/console/batches', [
      ['idempotencyKey', randomUUID()],
      ['name', 'Forged'],
      ['file', csv, 'f.csv'],
    ]);
    expect(without.status).toBe(403);
    expect(without.text).toContain('no valid CSRF token');
    const after = await postForm(maker, '/console/batches', [
      ['idempotencyKey', randomUUID()],
      ['name', 'Forged'],
      ['file', csv, 'f.csv'],
      ['_csrf', csrf],
    ]);
    expect(after.status).toBe(403);
    expect(await stack.database.fundingBatch.count()).toBe(before);
    // The same form with its token first is taken: the token was the only thing missing.
    const valid = await postForm(maker, '/console/batches', [
      ['_csrf', csrf],
      ['idempotencyKey', randomUUID()],
      ['name', 'Token first'],
      ['file', csv, 'f.csv'],
    ]);
    expect(valid.url).toMatch(/\/console\/batches\/[0-9a-f-]{36}\?did=created&proof=[\w-]+$/);
    expect(await stack.database.fundingBatch.count()).toBe(before + 1);
    await maker.close();
  });

  it('shows a reader no upload form and no buttons; the reader’s forged upload and approve get 403', async () => {
    const created = await stack.opsFetch('/ops/funding-batches?name=Reader%20test', {
      method: 'POST',
      headers: { 'content-type': 'text/csv', 'idempotency-key': randomUUID() },
      body: csvOf([['r-1', '1234567', '5.00']]),
    });
    const batchId = ((await created.json()) as { batchId: string }).batchId;
    const reader = await pageAs('ana', '/console/batches');
    expect(await reader.getByRole('heading', { name: 'Batches', level: 1 }).isVisible()).toBe(true);
    expect(await reader.locator('form[enctype="multipart/form-data"]').count()).toBe(0);
    expect(await reader.locator('main form[method=post]').count()).toBe(0);
    await reader.goto(`${stack.apiBase}/console/batches/${batchId}`);
    expect(await reader.getByText('AWAITING_APPROVAL').first().isVisible()).toBe(true);
    expect(await reader.locator('main form[method=post]').count()).toBe(0);
    const csrf = await csrfOf(reader);
    const before = await stack.database.fundingBatch.count();
    const forged = await postForm(reader, '/console/batches', [
      ['_csrf', csrf],
      ['idempotencyKey', randomUUID()],
      ['name', 'Forged'],
      ['file', csvOf([['x-1', '1234567', '5.00']]), 'x.csv'],
    ]);
    expect(forged.status).toBe(403);
    expect(await stack.database.fundingBatch.count()).toBe(before);
    expect(await postUrlencoded(reader, `/console/batches/${batchId}/approve`, { _csrf: csrf })).toBe(403);
    expect(await postUrlencoded(reader, `/console/batches/${batchId}/cancel`, { _csrf: csrf })).toBe(403);
    expect((await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).state).toBe(
      'AWAITING_APPROVAL',
    );
    await reader.close();
  });

  it('never lets the person who uploaded a batch approve it: no button, and a forged approve is 403 SAME_APPROVER in words', async () => {
    const lea = await pageAs('lea', '/console/batches');
    await upload(lea, 'Lea’s own', csvOf([['l-1', '1234567', '5.00']]));
    const batchId = batchIdOf(lea);
    expect(batchId).not.toBe('');
    expect(await lea.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(
      await lea
        .getByText('You uploaded this batch: another person with the approve scope approves or rejects it.')
        .isVisible(),
    ).toBe(true);
    const status = await postUrlencoded(lea, `/console/batches/${batchId}/approve`, { _csrf: await csrfOf(lea) });
    expect(status).toBe(403);
    const refusal = await lea.evaluate(
      async ({ path, csrf }) =>
        (
          await fetch(path, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: `_csrf=${encodeURIComponent(csrf)}`,
          })
        ).text(),
      {
        path: `/console/batches/${batchId}/approve`,
        csrf: await csrfOf(lea),
      },
    );
    expect(refusal).toContain('You uploaded this batch, so you cannot approve it');
    expect((await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).state).toBe(
      'AWAITING_APPROVAL',
    );
    await lea.close();
  });

  it('says in words what is wrong or refused, and the same form sent twice is one batch', async () => {
    const maker = await pageAs('maria', '/console/batches');
    await maker.getByLabel('Name', { exact: true }).fill('From a user’s balance');
    await maker.getByLabel('Paid from').selectOption('USER_BALANCE');
    await maker.getByLabel(/Partner user id/).fill('partner-user-7');
    await maker.getByLabel('CSV file').setInputFiles(csvFile(csvOf([['b-1', '1234567', '5.00']])));
    await maker.getByRole('button', { name: 'Check and submit' }).click();
    // Without admin, a user's balance pays only that user's own wallets, as through the API.
    expect(await maker.getByRole('table', { name: 'Problems in the file, by row' }).innerText()).toContain(
      'SOURCE_NOT_RECIPIENT',
    );
    // The form again, with what was typed.
    expect(await maker.getByLabel('Name', { exact: true }).inputValue()).toBe('From a user’s balance');
    expect(await maker.getByLabel(/Partner user id/).inputValue()).toBe('partner-user-7');
    await maker.getByLabel('Paid from').selectOption('TREASURY');
    await maker.getByLabel(/Partner user id/).fill('');
    await maker.getByLabel('CSV file').setInputFiles(csvFile(csvOf([['t-1', '1234567', '5.00']])));
    // The same form sent twice (a double click, a resend) is the same batch; sent with another file, it is refused.
    const [first, second, other] = await maker.evaluate(async () => {
      const form = document.querySelector<HTMLFormElement>('form[enctype="multipart/form-data"]')!;
      const send = async (body: FormData) => {
        const response = await fetch(form.action, { method: 'POST', body });
        return { url: response.url, status: response.status, text: await response.text() };
      };
      const changed = new FormData(form);
      changed.set(
        'file',
        new Blob(['reference,recipient_type,recipient,amount\nt-2,CODE,7654321,6.00\n'], { type: 'text/csv' }),
        'other.csv',
      );
      return [await send(new FormData(form)), await send(new FormData(form)), await send(changed)];
    });
    expect(first!.url).toMatch(/\?did=created&proof=[\w-]+$/);
    const withoutProof = (url: string) => url.replace(/&proof=[\w-]+$/, '');
    expect(withoutProof(second!.url)).toBe(withoutProof(first!.url).replace('did=created', 'did=existing'));
    expect(second!.text).toContain('This form had already been sent: this is the batch it made.');
    expect(other).toMatchObject({
      status: 422,
      text: expect.stringContaining('This form was already used to upload a different batch'),
    });
    // A file saved in another encoding than UTF-8 (Latin-1's é in a reference) is refused as such, read no further,
    // nothing stored.
    await maker.goto(`${stack.apiBase}/console/batches`);
    const batchesBefore = await stack.database.fundingBatch.count();
    const latin1 = await maker.evaluate(async () => {
      const form = document.querySelector<HTMLFormElement>('form[enctype="multipart/form-data"]')!;
      const body = new FormData(form);
      body.set('name', 'Latin-1');
      const bytes = new Uint8Array([
        ...new TextEncoder().encode('reference,recipient_type,recipient,amount\ncaf'),
        0xe9,
        ...new TextEncoder().encode(',CODE,1234567,5.00\n'),
      ]);
      body.set('file', new Blob([bytes], { type: 'text/csv' }), 'latin1.csv');
      const response = await fetch(form.action, { method: 'POST', body });
      return { status: response.status, text: await response.text() };
    });
    expect(latin1).toMatchObject({ status: 400, text: expect.stringContaining('The file is not UTF-8 text') });
    expect(await stack.database.fundingBatch.count()).toBe(batchesBefore);
    await maker.close();

    // With admin, a user's balance may pay any wallet: a user who has nothing is refused whole, in words, nothing held.
    const admin = await pageAs('rey', '/console/batches');
    const before = await stack.database.fundingBatch.count();
    await admin.getByLabel('Name', { exact: true }).fill('From a user with nothing');
    await admin.getByLabel('Paid from').selectOption('USER_BALANCE');
    await admin.getByLabel(/Partner user id/).fill(`broke-${randomUUID()}`);
    await admin.getByLabel('CSV file').setInputFiles(csvFile(csvOf([['n-1', '1234567', '5.00']])));
    await admin.getByRole('button', { name: 'Check and submit' }).click();
    expect(await admin.getByRole('alert').innerText()).toMatch(
      /^There is not enough money for this batch: .+ \(INSUFFICIENT_FUNDS\)\. Nothing was stored and nothing is held\.$/,
    );
    expect(await stack.database.fundingBatch.count()).toBe(before);
    await admin.close();
  });
});

describe('maker-checker across the console and the ops API (a person signed in with a named ops key)', () => {
  let keyStack: PartnerStack;
  const leadKey = randomBytes(24).toString('base64url');
  beforeAll(async () => {
    keyStack = await startPartnerStack({
      extraOpsKeys: [`lead:read+fund+approve:${leadKey}`],
      batches: { approvalThreshold: 1000n, maxInFlight: 4 },
    });
  }, 90_000);
  afterAll(async () => {
    await keyStack?.close();
  });

  it('the key that uploaded a batch approves it neither through the API nor in the console, whichever path uploaded it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${keyStack.apiBase}/console/sign-in`);
    await page.getByLabel('Your ops key').fill(leadKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${keyStack.apiBase}/console`);
    const approveByApi = async (batchId: string) =>
      (
        await fetch(`${keyStack.apiBase}/ops/funding-batches/${batchId}/approve`, {
          method: 'POST',
          headers: { authorization: `Bearer ${leadKey}` },
        })
      ).json() as Promise<{ status: number; code: string }>;

    // Uploaded in the console: the API refuses the same key's approval.
    await page.goto(`${keyStack.apiBase}/console/batches`);
    await upload(page, 'Lead’s console batch', csvOf([['c-1', '1234567', '5.00']]));
    const inConsole = batchIdOf(page);
    expect(await approveByApi(inConsole)).toMatchObject({ status: 403, code: 'SAME_APPROVER' });

    // Uploaded through the API: the console shows that key no Approve button and refuses a forged one.
    const created = await fetch(`${keyStack.apiBase}/ops/funding-batches?name=Lead%E2%80%99s%20API%20batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${leadKey}`, 'content-type': 'text/csv', 'idempotency-key': randomUUID() },
      body: csvOf([['a-1', '1234567', '5.00']]),
    });
    const throughApi = ((await created.json()) as { batchId: string }).batchId;
    await page.goto(`${keyStack.apiBase}/console/batches/${throughApi}`);
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    const forged = await page.evaluate(
      async ({ path, csrf }) => {
        const response = await fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `_csrf=${encodeURIComponent(csrf)}`,
        });
        return { status: response.status, text: await response.text() };
      },
      { path: `/console/batches/${throughApi}/approve`, csrf: await csrfOf(page) },
    );
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('SAME_APPROVER');
    for (const id of [inConsole, throughApi])
      expect(await keyStack.database.fundingBatch.findUniqueOrThrow({ where: { id } })).toMatchObject({
        state: 'AWAITING_APPROVAL',
        createdBy: 'lead',
        approvedBy: null,
      });
    await context.close();
  });
});

describe('the console’s batches, maker and checker', () => {
  it('upload, report, fix, submit, approval by another person, progress pushed to both, the report', async () => {
    await stack.startWorker();
    // Each execute takes a while, so the batch is seen running before it completes.
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 500 }]);
    const codes = await cashInCodes(8);
    const references = codes.map((_, index) => `pay-${index + 1}`);
    const maker = await pageAs('maria', '/console/batches');

    // A bad row: the report names it, and nothing is stored.
    const before = await stack.database.fundingBatch.count();
    const bad = csvOf(codes.map((code, index) => [references[index]!, index === 2 ? '12345' : code, '10.00']));
    await upload(maker, 'Payroll May', bad);
    expect(await maker.getByRole('heading', { level: 1 }).innerText()).toBe('The file has problems');
    expect(await maker.getByRole('alert').innerText()).toContain('1 problem in the batch: nothing was stored');
    const reportRows = await maker
      .getByRole('table', { name: 'Problems in the file, by row' })
      .locator('tbody tr')
      .allInnerTexts();
    expect(reportRows).toHaveLength(1);
    expect(reportRows[0]).toMatch(
      /^3\s+pay-3\s+recipient\.code\s+INVALID\s+recipient\.code must be the 7-digit cash-in code$/,
    );
    expect(await stack.database.fundingBatch.count()).toBe(before);

    // Fixed, and sent again from the form the report page gives (the name is kept).
    expect(await maker.getByLabel('Name', { exact: true }).inputValue()).toBe('Payroll May');
    await upload(maker, 'Payroll May', csvOf(codes.map((code, index) => [references[index]!, code, '10.00'])));
    await maker.waitForURL(/\?did=created&proof=[\w-]+$/);
    const batchId = batchIdOf(maker);
    expect(await maker.locator('#batch-progress').innerText()).toContain('AWAITING_APPROVAL');
    // The maker has no approve scope: no button, and the route itself refuses a forged approve.
    expect(await maker.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await postUrlencoded(maker, `/console/batches/${batchId}/approve`, { _csrf: await csrfOf(maker) })).toBe(
      403,
    );

    // The maker's page stays open, unreloaded: a mark in its window would not survive a reload.
    await maker.goto(`${stack.apiBase}/console/batches/${batchId}`);
    await maker.evaluate(() => ((window as unknown as { stayed: string }).stayed = 'never reloaded'));
    const makerFirst = await maker.locator('#batch-progress').innerText();
    expect(makerFirst).toContain('0 of 8 items done');

    const checker = await pageAs('jose', `/console/batches/${batchId}`);
    expect(await checker.getByText(`Uploaded by`).isVisible()).toBe(true);
    await checker.getByRole('button', { name: 'Approve' }).click();
    await checker.waitForURL(/\?did=approve&proof=[\w-]+$/);
    await checker.evaluate(() => ((window as unknown as { stayed: string }).stayed = 'never reloaded'));
    const checkerFirst = await checker.locator('#batch-progress').innerText();
    expect(checkerFirst).not.toContain('8 of 8 items done');

    // Both watch it complete, pushed to their pages.
    for (const page of [maker, checker]) {
      await page
        .locator('#batch-progress strong', { hasText: '8 of 8 items done (100%)' })
        .waitFor({ timeout: 45_000 });
      await page.locator('#batch-progress .badge', { hasText: 'COMPLETED' }).first().waitFor({ timeout: 10_000 });
      expect(await page.evaluate(() => (window as unknown as { stayed?: string }).stayed)).toBe('never reloaded');
      expect(await page.locator('#batch-progress').getAttribute('data-updated')).not.toBeNull();
      expect(await page.locator('#batch-progress progress').getAttribute('value')).toBe('8');
    }
    const makerLast = await maker.locator('#batch-progress').innerText();
    expect(makerLast).not.toBe(makerFirst);
    expect(makerLast).toContain(CHECKER);
    expect(makerLast).toContain('The batch is now COMPLETED');
    expect(await checker.locator('#batch-progress').innerText()).not.toBe(checkerFirst);
    await stack.admin.clearFaults();

    // The report: every reference exactly once, as the ops API writes it.
    await checker.reload();
    const [download] = await Promise.all([
      checker.waitForEvent('download'),
      checker.getByRole('link', { name: 'Download the report' }).click(),
    ]);
    const report = readFileSync(await download.path(), 'utf8');
    const lines = report.trim().split('\r\n');
    expect(lines[0]).toBe('"reference","funding_id","status","error_code","currency","amount"');
    expect(
      lines
        .slice(1)
        .map((line) => line.split(',')[0]!.replaceAll('"', ''))
        .sort(),
    ).toEqual([...references].sort());
    expect(lines.slice(1).every((line) => line.includes('"APPROVED"'))).toBe(true);
    expect(report).toBe(await (await stack.opsFetch(`/ops/funding-batches/${batchId}/report`)).text());

    // Who acted, on the batch and in the audit (channel console), by their names.
    expect(await stack.database.fundingBatch.findUniqueOrThrow({ where: { id: batchId } })).toMatchObject({
      state: 'COMPLETED',
      createdBy: MAKER,
      approvedBy: CHECKER,
    });
    const audited = await waitFor(
      'the console writes audited',
      async () => {
        const rows = await stack.database.opsAction.findMany({
          where: { channel: 'console', path: { in: ['/console/batches', `/console/batches/${batchId}/approve`] } },
        });
        return rows.some((row) => row.path.endsWith('/approve') && row.status === 303) ? rows : undefined;
      },
      10_000,
    );
    expect(
      audited.filter((row) => row.path === '/console/batches' && row.status === 303).map((row) => row.keyName),
    ).toContain(MAKER);
    expect(
      audited.filter((row) => row.path === '/console/batches' && row.status === 422).map((row) => row.keyName),
    ).toContain(MAKER);
    expect(audited.filter((row) => row.path.endsWith('/approve')).map((row) => [row.keyName, row.status])).toEqual(
      expect.arrayContaining([
        [MAKER, 403],
        [CHECKER, 303],
      ]),
    );

    // The items, a page at a time and by status.
    await checker.goto(`${stack.apiBase}/console/batches/${batchId}`);
    expect(await checker.getByRole('table', { name: 'Items, by reference' }).locator('tbody tr').count()).toBe(8);
    await checker.getByLabel('Status').selectOption('PENDING');
    await checker.getByRole('button', { name: 'Show' }).click();
    expect(await checker.getByText('No item is PENDING.').isVisible()).toBe(true);
    await maker.close();
    await checker.close();
  });
});

describe('the console’s batch pages, as they look', () => {
  const pages = async () => {
    const batch = await stack.database.fundingBatch.findFirstOrThrow({
      where: { createdBy: MAKER, state: 'COMPLETED' },
      orderBy: { createdAt: 'desc' },
    });
    return { list: '/console/batches', batch: `/console/batches/${batch.id}` };
  };
  /** The upload report page: a file with problems, uploaded by the maker. */
  async function reportPage(page: Page): Promise<void> {
    await page.goto(`${stack.apiBase}/console/batches`);
    await upload(
      page,
      'Layout check',
      csvOf([
        ['ok-1', '1234567', '5.00'],
        ['bad ref', '1234567', '5.00'],
        ['ok-3', '12', '5.x'],
      ]),
    );
    expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('The file has problems');
  }

  it('fits 1280 px and 390 px without the page scrolling sideways (wide tables scroll in their box)', async () => {
    mkdirSync('test-results', { recursive: true });
    const paths = await pages();
    const page = await (await signedIn('maria')).newPage();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      for (const [name, open] of [
        ['list', () => page.goto(`${stack.apiBase}${paths.list}`)],
        ['report', () => reportPage(page)],
        ['batch', () => page.goto(`${stack.apiBase}${paths.batch}`)],
      ] as const) {
        await open();
        const overflow = await page.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
        );
        expect(overflow, `${name} at ${width} px`).toBeLessThanOrEqual(0);
        await page.screenshot({ path: `test-results/console-batches-${name}-${width}.png`, fullPage: true });
      }
    }
    await page.close();
  });

  // One test per width: each reads three pages with axe, which takes seconds a page on a busy machine.
  it.each([1280, 390])(
    'has no serious or critical axe violation on the list, the upload report and a batch at %i px',
    async (width) => {
      const paths = await pages();
      const page = await (await signedIn('maria')).newPage();
      const found: string[] = [];
      await page.setViewportSize({ width, height: 900 });
      for (const [name, open] of [
        ['list', () => page.goto(`${stack.apiBase}${paths.list}`)],
        ['report', () => reportPage(page)],
        ['batch', () => page.goto(`${stack.apiBase}${paths.batch}`)],
      ] as const) {
        await open();
        for (const finding of await seriousAxeFindings(page)) found.push(`${name} at ${width} px: ${finding}`);
      }
      expect(found).toEqual([]);
      await page.close();
    },
  );
});
