// The ops console's pages in headless Chromium, on the real stack: the API and its
// console, a worker, the sandbox wallet, a deliverer of webhooks with a short retry window, and a
// real OpenID Connect provider whose staff have one role each. People act through the pages as
// they would (the review queue's resolve, an adjustment, a redelivery, a revoke, the search), the
// tests read what the pages show and what the database then holds; a reader sees no button and
// each write forged with their own CSRF token gets 403 and changes nothing; every page renders at
// 1280 px and 390 px without horizontal overflow and with no serious or critical axe finding.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleVersion, promoteOnStart, versionedWorkerOptions } from '../../lib/worker-deployment.ts';
import type { FundingView } from '../../domain/funding.ts';
import { moneyOf } from '../../domain/money.ts';
import type { WebhookDeliveryView } from '../../domain/webhook.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { parseConsoleRoles } from '../../lib/console-roles.ts';
import { createLogger } from '../../lib/logger.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { startIdentityProvider, type RunningIdentityProvider } from '../../sandbox/identity-provider.ts';
import type { WalletClient } from '../../wallet/index.ts';
import { startDeliverWebhooks } from '../../workflows/deliver-webhooks.contract.ts';
import { seriousAxeFindings } from '../support/axe.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { plantApprovedDay } from '../../harness/settlement-day.ts';

const resultsDir = path.resolve(import.meta.dirname, '../../test-results');
const clientSecret = randomUUID();

/** One role each: what a person may do is exactly their group's scopes. */
const staff = [
  { username: 'rosa', password: 'rosa-pass', name: 'Rosa Reyes', groups: ['walletflow-resolvers'] },
  { username: 'ana', password: 'ana-pass', name: 'Ana Cruz', groups: ['walletflow-accountants'] },
  { username: 'ben', password: 'ben-pass', name: 'Ben Santos', groups: ['walletflow-admins'] },
  { username: 'rey', password: 'rey-pass', name: 'Rey Lim', groups: ['walletflow-readers'] },
  { username: 'lea', password: 'lea-pass', name: 'Lea Ocampo', groups: ['walletflow-leads'] },
];
const roles = parseConsoleRoles([
  'walletflow-resolvers=read+resolve',
  'walletflow-accountants=read+accounts',
  'walletflow-admins=read+admin',
  'walletflow-readers=read',
  'walletflow-leads=read+fund+pay+resolve+accounts+admin+approve',
]);
const recorded = (username: string) =>
  `${staff.find((member) => member.username === username)!.name} (oidc:staff-${username})`;

let browser: Browser;
let idp: RunningIdentityProvider;
let stack: PartnerStack;
let deliverer: { worker: Worker; connection: NativeConnection; running: Promise<void>; workflowId: string };
let receiver: { server: Server; url: string; accepting: boolean; received: number };

/** What the tests act on, made once. */
const made = {
  /**
   * Two code fundings parked in NEEDS_REVIEW by the sandbox's late-effect fault (one is resolved, one stays for the
   * layout test).
   */
  reviews: Promise.resolve([] as FundingView[]),
  searched: { fundingId: '', idempotencyKey: '', transferId: '', code: '', batchId: '', batchReference: '' },
  /** A funding stored PENDING with no workflow: cancellable for as long as no one cancels it. */
  pendingFundingId: '',
  paymentId: '',
  linkUser: `console-link-user-${randomUUID().slice(0, 8)}`,
  linkIds: [] as string[],
  accountUser: `console-account-${randomUUID().slice(0, 8)}`,
  endpointId: '',
  deadDeliveryId: '',
};

async function ops(
  pathname: string,
  init: { method?: string; body?: unknown; key?: string } = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await stack.opsFetch(pathname, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.key ? { 'idempotency-key': init.key } : {}) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function cashInCode(): Promise<string> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  return (await stack.admin.cashInCode(user.userId)).code;
}

async function eventually<T>(read: () => Promise<T>, until: (value: T) => boolean, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (until(value)) return value;
    if (Date.now() > deadline) throw new Error(`still not there: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

const fundingOf = async (fundingId: string) => (await ops(`/ops/fundings/${fundingId}`)).json as unknown as FundingView;

/** Signs a staff member in at the identity provider; the page is on the console's home. */
async function signIn(username: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({
    viewport,
    ...(viewport.width < 600 ? { isMobile: true, hasTouch: true } : {}),
  });
  const page = await context.newPage();
  // The console asks before an irreversible act (window.confirm): the person says yes.
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${stack.apiBase}/console`);
  await page.getByRole('link', { name: /Sign in with/ }).click();
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password').fill(staff.find((member) => member.username === username)!.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${stack.apiBase}/console`);
  return page;
}

async function startDeliverer(): Promise<typeof deliverer> {
  const taskQueue = `console-pages-webhooks-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await Worker.create({
    connection,
    namespace: inject('temporalNamespace'),
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    workerDeploymentOptions: versionedWorkerOptions(
      bundleVersion(taskQueue, { codePath: inject('workflowBundlePath') }),
    ),
    activities: stackActivities(stack, {
      wallet: {} as WalletClient,
      taskQueue,
      // Dead-lettered after 2.5 s of failures instead of 24 hours.
      webhooks: { retry: { baseDelayMs: 100, maxDelayMs: 400, retryForMs: 2500 }, requestTimeoutMs: 2000 },
    }),
  });
  const running = worker.run();
  // Its own deployment (the task queue's): this build is the current one.
  await promoteOnStart(
    stack.temporal,
    bundleVersion(taskQueue, { codePath: inject('workflowBundlePath') }),
    'always',
    createLogger({ level: 'silent' }),
  );
  const workflowId = `console-pages-deliverer-${randomUUID()}`;
  await startDeliverWebhooks(stack.temporal, { taskQueue, workflowId, input: { pollIntervalMs: 100, roundMs: 2000 } });
  return { worker, connection, running, workflowId };
}

/** The partner's endpoint: 500 until it accepts again. */
async function startReceiver(): Promise<typeof receiver> {
  const state = { accepting: false, received: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received += 1;
      res.statusCode = state.accepting ? 200 : 500;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
}

beforeAll(async () => {
  browser = await launchChromium();
  stack = await startPartnerStack({
    console: async (apiBase) => {
      idp = await startIdentityProvider({
        clients: [{ clientId: 'walletflow-console', clientSecret, redirectUris: [`${apiBase}/console/oidc/callback`] }],
        staff,
      });
      return {
        oidc: { issuer: idp.issuer, clientId: 'walletflow-console', clientSecret, roles, groupsClaim: 'groups' },
        idleMinutes: 15,
        sessionHours: 8,
        temporalUiUrl: 'http://temporal-ui.example:8233',
      };
    },
  });
  await stack.startWorker();
  [deliverer, receiver] = await Promise.all([startDeliverer(), startReceiver()]);

  // Two fundings whose executes all time out and are processed later: each ends in NEEDS_REVIEW.
  await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'late-effect', rate: 1, delayMs: 60_000 }]);
  const parked = await Promise.all(
    [0, 1].map(async (index) => {
      const started = await ops('/ops/fundings', {
        method: 'POST',
        key: `console-review-${index}-${randomUUID()}`,
        body: {
          recipient: { type: 'CODE', code: await cashInCode() },
          amount: { currency: 'PHP', value: `1${index}.00` },
        },
      });
      expect(started.status).toBe(202);
      return started.json.fundingId as string;
    }),
  );
  made.reviews = Promise.all(
    parked.map((fundingId) =>
      eventually(
        () => fundingOf(fundingId),
        (funding) => funding.status === 'NEEDS_REVIEW',
        80_000,
      ),
    ),
  );
  made.reviews.catch(() => undefined);

  // What the search finds: a code funding (its transfer id is stored before any execute), a batch item by reference, a
  // user's links.
  const code = await cashInCode();
  const key = `console-search-${randomUUID()}`;
  const funding = await ops('/ops/fundings', {
    method: 'POST',
    key,
    body: { recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '7.25' } },
  });
  const batchReference = `ref-${randomUUID().slice(0, 8)}`;
  const batch = await ops('/ops/funding-batches', {
    method: 'POST',
    key: randomUUID(),
    body: {
      name: 'Console cash-back',
      items: [
        {
          reference: batchReference,
          recipient: { type: 'CODE', code: await cashInCode() },
          amount: { currency: 'PHP', value: '3.00' },
        },
      ],
    },
  });
  expect(batch.status).toBe(202);
  const withTransfer = await eventually(
    () => fundingOf(funding.json.fundingId as string),
    (view) => view.transferId !== null,
  );
  made.searched = {
    fundingId: withTransfer.fundingId,
    idempotencyKey: key,
    transferId: withTransfer.transferId!,
    code,
    batchId: batch.json.batchId as string,
    batchReference,
  };

  const links = await Promise.all(
    [0, 1].map(() =>
      createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '500.00' }, { partnerUserId: () => made.linkUser }),
    ),
  );
  made.linkIds = links.map((link) => link.linkId);
  const payment = await ops('/ops/payments', {
    method: 'POST',
    key: randomUUID(),
    body: { linkId: links[0]!.linkId, amount: { currency: 'PHP', value: '20.00' } },
  });
  expect(payment.status).toBe(202);
  made.paymentId = payment.json.id as string;

  // A funding stored as the API stores one, without a workflow to take it on: it stays PENDING.
  const record = createFundingRecord({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
  const pending = newFundingRow('console-pending', {
    recipient: { type: 'CODE', code: '7654321' },
    amount: moneyOf({ currency: 'PHP', value: '4.00' }),
  });
  await record.insert(pending);
  made.pendingFundingId = pending.id;

  // A dead letter: a funding cancelled (funding.failed) to an endpoint that answers 500 for the whole retry window.
  const endpoint = await ops('/ops/webhooks/endpoints', {
    method: 'POST',
    body: { url: receiver.url, events: ['funding.failed'] },
  });
  expect(endpoint.status).toBe(201);
  made.endpointId = endpoint.json.id as string;
  const failed = newFundingRow('console-failed', { amount: moneyOf({ currency: 'PHP', value: '2.00' }) });
  await record.insert(failed);
  expect(await record.cancel({ id: failed.id, createdAt: new Date() }, 'console-pages-test')).toBe(true);
  const dead = await eventually(
    async () =>
      (await ops(`/ops/webhooks/deliveries?endpointId=${made.endpointId}&status=FAILED`)).json
        .items as WebhookDeliveryView[],
    (items) => items.length === 1,
  );
  made.deadDeliveryId = dead[0]!.id;
}, 150_000);

afterAll(async () => {
  await stack?.admin.clearFaults().catch(() => undefined);
  await stack?.temporal.workflow
    .getHandle(deliverer?.workflowId ?? 'none')
    .terminate('test over')
    .catch(() => undefined);
  deliverer?.worker.shutdown();
  await deliverer?.running.catch(() => undefined);
  await deliverer?.connection.close();
  receiver?.server.closeAllConnections();
  await new Promise((resolve) => receiver?.server.close(resolve) ?? resolve(undefined));
  await closeChromium(browser);
  await stack?.close();
  await idp?.close();
});

describe('the console’s search', () => {
  it('finds a funding by id, idempotency key, transfer id and a code’s last two digits (masked), a batch by reference, a link by partner user id', async () => {
    const page = await signIn('rey');
    try {
      const { fundingId, idempotencyKey, transferId, code, batchId, batchReference } = made.searched;
      const search = async (q: string) => {
        await page.goto(`${stack.apiBase}/console`);
        await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Search' }).click();
        await page.getByRole('searchbox').fill(q);
        await page.getByRole('button', { name: 'Search' }).click();
        await page.waitForURL(/\/console\/search\?q=/);
        return page.locator('main');
      };
      for (const q of [fundingId, idempotencyKey, transferId]) {
        const main = await search(q);
        await expect(main.getByRole('link', { name: fundingId }).count(), q).resolves.toBe(1);
      }
      const byCode = await search(code.slice(-2));
      await expect(byCode.getByRole('link', { name: fundingId }).count()).resolves.toBe(1);
      const shown = await byCode.innerText();
      expect(shown).toContain(`*****${code.slice(-2)}`);
      expect(shown).not.toContain(code);
      expect(await page.content()).not.toContain(code);
      const byReference = await search(batchReference);
      await expect(byReference.getByRole('link', { name: batchId }).count()).resolves.toBe(1);
      const byUser = await search(made.linkUser);
      for (const linkId of made.linkIds)
        await expect(byUser.getByRole('link', { name: linkId }).count()).resolves.toBe(1);
      // A result opens its page.
      await byUser.getByRole('link', { name: made.linkIds[0]! }).click();
      await page.waitForURL(`${stack.apiBase}/console/links/${made.linkIds[0]}`);
      await expect(page.getByRole('heading', { level: 1, name: 'Link' }).isVisible()).resolves.toBe(true);
    } finally {
      await page.context().close();
    }
  });
});

describe('an adjustment from the accounts page', () => {
  it('is posted once even when its form is sent twice, and the ledger entry names the person', async () => {
    const page = await signIn('ana');
    try {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).click();
      await page.getByLabel('Partner user id').fill(made.accountUser);
      await page.getByRole('button', { name: 'Open the account' }).click();
      await page.waitForURL(`${stack.apiBase}/console/accounts/${made.accountUser}`);
      await page.getByLabel(/^Amount in PHP/).fill('125.50');
      await page.getByLabel('Reason').fill('Goodwill credit, ticket 4711');
      const key = await page.locator('form.adjust input[name=idempotencyKey]').inputValue();
      // The same form sent twice at once (a double click, a flaky network), then once more by its button.
      const statuses = await page.evaluate(async () => {
        const form = document.querySelector<HTMLFormElement>('form.adjust')!;
        const send = () =>
          fetch(form.action, {
            method: 'POST',
            body: new URLSearchParams(new FormData(form) as unknown as Record<string, string>),
            redirect: 'manual',
          }).then((response) => response.status);
        return Promise.all([send(), send()]);
      });
      expect(statuses.every((status) => status === 0 || status === 303)).toBe(true);
      await page.getByRole('button', { name: 'Post adjustment' }).click();
      await page.waitForURL(/done=(adjusted|already)/);
      expect(await page.locator('main [role=status]').first().innerText()).toMatch(/adjustment \d+ (stands|posted)/i);
      const transactions = await stack.database.ledgerTransaction.findMany({
        where: { reference: `adjustment:${key}` },
      });
      expect(transactions).toHaveLength(1);
      expect(transactions[0]!.actor).toBe(recorded('ana'));
      expect(transactions[0]!.reason).toBe('Goodwill credit, ticket 4711');
      const account = await ops(`/ops/accounts/${made.accountUser}`);
      expect(account.json.balance).toEqual({ currency: 'PHP', value: '125.50' });
      // The page shows the entry and who posted it.
      const entries = page.getByRole('table', { name: 'Ledger entries' });
      expect(await entries.innerText()).toContain(`${recorded('ana')}: Goodwill credit, ticket 4711`);
      // The audit names the person, on the console's channel.
      const audited = await eventually(
        () =>
          stack.database.opsAction.findMany({ where: { path: `/console/accounts/${made.accountUser}/adjustments` } }),
        (rows) => rows.length === 3,
      );
      expect(
        audited.every((row) => row.keyName === recorded('ana') && row.channel === 'console' && row.status === 303),
      ).toBe(true);
    } finally {
      await page.context().close();
    }
  });
});

describe('the settlement download', () => {
  it('downloads a settled day at once; a big day’s run is followed on a page of its own, pushed, which then offers the file', async () => {
    const page = await signIn('ana');
    try {
      await page.goto(`${stack.apiBase}/console/accounts`);
      // The day's settlement report downloads as CSV (yesterday's by default: a small day, settled within the
      // download's wait).
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      expect(download.suggestedFilename()).toMatch(/^settlement-\d{4}-\d{2}-\d{2}\.csv$/);
      // A big day's run outlasts the wait: a page follows its progress, pushed, then offers the file.
      const day = `20${String(10 + Math.floor(Math.random() * 9)).padStart(2, '0')}-0${1 + Math.floor(Math.random() * 9)}-1${Math.floor(Math.random() * 9)}`;
      await plantApprovedDay(
        { databaseUrl: testDatabaseUrl(), admin: stack.admin },
        { date: day, timeZone: 'Asia/Manila', count: 100 },
      );
      const faults = (
        await stack.admin.call<{ rules: Array<{ endpoint: string; mode: string; rate: number }> }>('GET', '/faults')
      ).body.rules;
      await stack.admin.setFaults([
        ...faults,
        { endpoint: 'transfers.retrieve', mode: 'latency', rate: 1, delayMs: 2000 },
      ]);
      try {
        await page.getByLabel(/^Day/).fill(day);
        await page.getByRole('button', { name: 'Download CSV' }).click();
        await page.waitForURL(`${stack.apiBase}/console/settlements?date=${day}`);
        const progress = page.locator('#settlement-progress');
        expect(await progress.innerText()).toMatch(/\d+ of 100 fundings and payments checked/);
        expect(await progress.locator('progress').getAttribute('max')).toBe('100');
        expect(await seriousAxeFindings(page)).toEqual([]);
      } finally {
        await stack.admin.setFaults(faults);
      }
      const ready = page.locator('#settlement-progress').getByRole('link', { name: 'Download CSV' });
      await ready.waitFor({ timeout: 60_000 });
      const [file] = await Promise.all([page.waitForEvent('download'), ready.click()]);
      expect(file.suggestedFilename()).toBe(`settlement-${day}.csv`);
      expect((await readFile(await file.path(), 'utf8')).split('\r\n').filter(Boolean)).toHaveLength(1 + 100 + 2);
    } finally {
      await page.context().close();
    }
  });
});

describe('a link revoked from the links page', () => {
  it('loses its tokens and stays, UNLINKED, with who revoked it in its history', async () => {
    const page = await signIn('ana');
    try {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Links' }).click();
      await page.getByLabel('Partner user id').fill(made.linkUser);
      await page.getByRole('button', { name: 'Show their links' }).click();
      const linkId = made.linkIds[1]!;
      await page.getByRole('link', { name: linkId }).click();
      await page.waitForURL(`${stack.apiBase}/console/links/${linkId}`);
      await page.getByRole('button', { name: 'Revoke link' }).click();
      await page.waitForURL(/done=unlinked/);
      expect(await page.locator('main [role=status]').first().innerText()).toContain('Revoked');
      const link = await stack.database.link.findUniqueOrThrow({
        where: { id: linkId },
        include: { tokens: true, events: { orderBy: { id: 'desc' }, take: 1 } },
      });
      expect(link.status).toBe('UNLINKED');
      expect(link.tokens).toBeNull();
      expect(link.events[0]).toMatchObject({ type: 'UNLINKED', actor: recorded('ana') });
      expect(await page.getByRole('table', { name: 'The link’s history' }).innerText()).toContain(recorded('ana'));
      // No revoke button on a link already revoked.
      await expect(page.getByRole('button', { name: 'Revoke link' }).count()).resolves.toBe(0);
    } finally {
      await page.context().close();
    }
  });
});

describe('a dead-lettered webhook delivery', () => {
  it('is redelivered by an admin from the webhooks page, and arrives', async () => {
    const page = await signIn('ben');
    try {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks' }).click();
      const dead = page.getByRole('table', { name: 'Dead letters, newest first' });
      await expect(dead.getByRole('link', { name: made.deadDeliveryId }).count()).resolves.toBe(1);
      const before = await stack.database.webhookDelivery.findUniqueOrThrow({
        where: { id: made.deadDeliveryId },
        include: { attemptLog: true },
      });
      expect(before.status).toBe('FAILED');
      receiver.accepting = true;
      await dead.getByRole('link', { name: made.deadDeliveryId }).click();
      await page.getByRole('button', { name: `Redeliver ${made.deadDeliveryId}` }).click();
      await page.waitForURL(/done=redelivered/);
      const after = await eventually(
        () =>
          stack.database.webhookDelivery.findUniqueOrThrow({
            where: { id: made.deadDeliveryId },
            include: { attemptLog: { orderBy: { id: 'asc' } } },
          }),
        (delivery) => delivery.status === 'SUCCEEDED',
        20_000,
      );
      expect(after.attemptLog).toHaveLength(before.attemptLog.length + 1);
      expect(after.attemptLog.at(-1)).toMatchObject({ statusCode: 200, error: null });
      // Stored under the person who pressed the button, and shown on the delivery.
      expect(after.redeliveredBy).toBe(recorded('ben'));
      await page.reload();
      expect(await page.getByRole('table', { name: 'Attempts, oldest first' }).innerText()).toContain('HTTP 200');
      expect(await page.locator('main').innerText()).toContain(`by ${recorded('ben')}`);
      const audited = await eventually(
        () =>
          stack.database.opsAction.findFirst({
            where: { path: `/console/webhooks/deliveries/${made.deadDeliveryId}/redeliver` },
          }),
        (row) => row !== null,
      );
      expect(audited).toMatchObject({ keyName: recorded('ben'), channel: 'console', status: 303 });
    } finally {
      await page.context().close();
    }
  });
});

describe('a reader', () => {
  it('sees no button on any page, and each write forged with their own CSRF token gets 403 and changes nothing', async () => {
    const [review] = await made.reviews;
    const page = await signIn('rey');
    try {
      const deliveryBefore = await stack.database.webhookDelivery.findUniqueOrThrow({
        where: { id: made.deadDeliveryId },
      });
      for (const [, pathname] of pagesToVisit()) {
        const response = await page.goto(`${stack.apiBase}${pathname}`);
        expect(response?.status(), pathname).toBe(200);
        // Only the searches and filters (GET forms) have buttons; nothing that writes. The settlement's
        // form is a POST (a run is work, started only by a person's form) that needs read only: a report.
        const writes = await page.evaluate(() => {
          const reads = (form: Element | null) =>
            form?.getAttribute('method') === 'get' || form?.getAttribute('action') === '/console/settlements';
          return {
            forms: Array.from(document.querySelectorAll('main form[method=post]')).filter((form) => !reads(form))
              .length,
            buttons: Array.from(document.querySelectorAll('main button:not(.copy)')).filter(
              (button) => !reads(button.closest('form')),
            ).length,
          };
        });
        expect(writes, pathname).toEqual({ forms: 0, buttons: 0 });
      }
      const csrf = await page.locator('header input[name=_csrf]').getAttribute('value');
      const forge = (action: string, fields: Record<string, string>) =>
        page.evaluate(
          async ({ action, body }) =>
            (
              await fetch(action, {
                method: 'POST',
                headers: { 'content-type': 'application/x-www-form-urlencoded' },
                body,
                redirect: 'manual',
              })
            ).status,
          { action, body: new URLSearchParams({ _csrf: csrf ?? '', ...fields }).toString() },
        );
      const forgedKey = randomUUID();
      const forged = {
        cancel: await forge(`/console/fundings/${made.pendingFundingId}/cancel`, {}),
        resolveFunding: await forge(`/console/fundings/${review!.fundingId}/resolve`, {
          outcome: 'FAILED',
          note: 'forged',
        }),
        resolvePayment: await forge(`/console/payments/${made.paymentId}/resolve`, {
          outcome: 'FAILED',
          note: 'forged',
        }),
        adjust: await forge(`/console/accounts/${made.accountUser}/adjustments`, {
          idempotencyKey: forgedKey,
          amount: '-100.00',
          reason: 'forged',
        }),
        redeliver: await forge(`/console/webhooks/deliveries/${made.deadDeliveryId}/redeliver`, {}),
        unlink: await forge(`/console/links/${made.linkIds[0]}/unlink`, {}),
      };
      expect(forged).toEqual({
        cancel: 403,
        resolveFunding: 403,
        resolvePayment: 403,
        adjust: 403,
        redeliver: 403,
        unlink: 403,
      });
      expect((await fundingOf(made.pendingFundingId)).status).toBe('PENDING');
      expect((await fundingOf(review!.fundingId)).status).toBe('NEEDS_REVIEW');
      expect((await ops(`/ops/payments/${made.paymentId}`)).json.review ?? null).toBeNull();
      expect(await stack.database.ledgerTransaction.count({ where: { reference: `adjustment:${forgedKey}` } })).toBe(0);
      expect(
        (await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id: made.deadDeliveryId } })).updatedAt,
      ).toEqual(deliveryBefore.updatedAt);
      expect((await stack.database.link.findUniqueOrThrow({ where: { id: made.linkIds[0]! } })).status).toBe('ACTIVE');
      // Each refusal is audited under the reader's name.
      const refused = await eventually(
        () => stack.database.opsAction.findMany({ where: { keyName: recorded('rey'), status: 403 } }),
        (rows) => rows.length === 6,
      );
      expect(refused.every((row) => row.channel === 'console')).toBe(true);
    } finally {
      await page.context().close();
    }
  });
});

describe('the review queue', () => {
  it('resolves a funding in NEEDS_REVIEW for a person with the resolve scope, under their name; a blank note is refused and nothing is done', async () => {
    const [review] = await made.reviews;
    await stack.admin.clearFaults();
    const page = await signIn('rosa');
    try {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Review' }).click();
      const item = page.getByRole('article', { name: `Funding ${review!.fundingId}` });
      expect(await item.innerText()).toContain(review!.review!.reason);
      // Every wallet call behind the doubt is listed by its Request-Reference-No.
      for (const attempt of review!.review!.attempts.filter((each) => each.requestReferenceNo))
        expect(await item.innerText()).toContain(attempt.requestReferenceNo);
      // A note of blanks passes the browser's `required`, and the server refuses it.
      await item.getByLabel(/^Note/).fill('   ');
      await item.getByRole('button', { name: 'Resolve' }).click();
      await page.waitForURL(`${stack.apiBase}/console/fundings/${review!.fundingId}/resolve`);
      expect(await page.getByRole('alert').innerText()).toContain('note must say why');
      expect((await fundingOf(review!.fundingId)).status).toBe('NEEDS_REVIEW');
      await page.getByRole('link', { name: 'Back to the review queue' }).click();
      const again = page.getByRole('article', { name: `Funding ${review!.fundingId}` });
      await again.getByLabel('Outcome').selectOption('APPROVED');
      await again.getByLabel(/^Note/).fill('The operator’s portal shows the transfer APPROVED');
      await again.getByRole('button', { name: 'Resolve' }).click();
      await page.waitForURL(/\/console\/review\?.*done=resolved/);
      expect(await page.locator('main [role=status]').first().innerText()).toContain(`Resolved ${review!.fundingId}`);
      const resolved = await fundingOf(review!.fundingId);
      expect(resolved.status).toBe('APPROVED');
      expect(resolved.review?.resolution).toMatchObject({
        outcome: 'APPROVED',
        by: recorded('rosa'),
        note: 'The operator’s portal shows the transfer APPROVED',
      });
      // Its page shows the resolution and who made it in the timeline.
      await page.goto(`${stack.apiBase}/console/fundings/${review!.fundingId}`);
      expect(await page.getByRole('table', { name: 'The funding’s events, oldest first' }).innerText()).toContain(
        recorded('rosa'),
      );
      expect(await page.getByRole('link', { name: /in the Temporal UI/ }).getAttribute('href')).toMatch(
        /^http:\/\/temporal-ui\.example:8233\/namespaces\/[^/]+\/workflows\/.+/,
      );
      // The audit shows both tries under her name (besides her sign-in), found by her display name and the kind of act.
      await eventually(
        () => stack.database.opsAction.count({ where: { keyName: recorded('rosa'), path: { endsWith: '/resolve' } } }),
        (count) => count === 2,
      );
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Audit' }).click();
      await page.getByLabel(/^Person/).fill('Rosa Reyes');
      await page.getByLabel('Kind of act').selectOption('funding.resolve');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/\/console\/audit\?/);
      const acts = page.getByRole('table', { name: 'Audited acts, newest first' });
      expect(await acts.innerText()).toContain(`/console/fundings/${review!.fundingId}/resolve`);
      expect(await acts.locator('tbody tr').allInnerTexts()).toEqual([
        expect.stringMatching(/303/),
        expect.stringMatching(/400/),
      ]);
    } finally {
      await page.context().close();
    }
  }, 120_000);
});

/** Every page of the console's record areas, as a person opens them, each with a name for its screenshot. */
function pagesToVisit(reviewFundingId?: string): Array<[name: string, pathname: string]> {
  return [
    ['search', '/console/search'],
    ['search-results', `/console/search?q=${encodeURIComponent(made.searched.code.slice(-2))}`],
    ['funding', `/console/fundings/${reviewFundingId ?? made.searched.fundingId}`],
    ['funding-pending', `/console/fundings/${made.pendingFundingId}`],
    ['payment', `/console/payments/${made.paymentId}`],
    ['review', '/console/review'],
    ['accounts', '/console/accounts'],
    ['account', `/console/accounts/${made.accountUser}`],
    ['account-treasury', '/console/accounts/TREASURY'],
    ['webhooks', '/console/webhooks'],
    ['webhook-endpoint', `/console/webhooks/${made.endpointId}`],
    ['webhook-delivery', `/console/webhooks/deliveries/${made.deadDeliveryId}`],
    ['links', `/console/links?partnerUserId=${made.linkUser}`],
    ['link', `/console/links/${made.linkIds[0]}`],
    ['audit', '/console/audit'],
  ];
}

describe('every page', () => {
  it('renders at 1280 px and 390 px without horizontal overflow, with no serious or critical axe finding', async () => {
    const reviews = await made.reviews;
    await mkdir(resultsDir, { recursive: true });
    // Both widths at once, each in a browser context of its own (axe takes most of the time, in each page's renderer).
    await Promise.all(
      [
        { width: 1280, height: 900 },
        { width: 390, height: 844 },
      ].map(async (viewport) => {
        const page = await signIn('lea', viewport);
        try {
          // Each page once (a second funding's page is the same page): the search with results, the funding in review
          // with its form.
          const pages = pagesToVisit(reviews[1]!.fundingId).filter(
            ([name]) => name !== 'search' && name !== 'funding-pending',
          );
          for (const [name, pathname] of [['home', '/console'] as [string, string], ...pages]) {
            const where = `${pathname} at ${viewport.width} px`;
            const response = await page.goto(`${stack.apiBase}${pathname}`);
            expect(response?.status(), where).toBe(200);
            // The page itself never scrolls sideways (a wide table scrolls inside its own box).
            const overflow = await page.evaluate(
              () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
            );
            expect(overflow, where).toBeLessThanOrEqual(0);
            await page.screenshot({
              path: path.join(resultsDir, `console-${name}-${viewport.width}.png`),
              fullPage: true,
            });
            expect(await seriousAxeFindings(page), where).toEqual([]);
          }
        } finally {
          await page.context().close();
        }
      }),
    );
    // 17 pages at two widths, axe on each (about a second a page): 26 s alone, 45 s in a full run, more when loaded.
  }, 360_000);
});
