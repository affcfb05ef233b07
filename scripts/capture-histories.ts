// `npm run histories:capture`: runs every fundWallet path on a real stack and stores each history
// as Temporal JSON in test/replay/histories/, for the replay tests. See docs/changing-workflows.md.
//
//   npm run histories:capture                              # boots everything in this process
//   npm run histories:capture -- --address 127.0.0.1:7233  # on a running Temporal (npm run dev's)
//   npm run histories:capture -- --only cancelled,declined # a subset
//   npm run histories:capture -- --archive before-<change>  # keep the replaced ones in archive/
// TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE / DATABASE_URL are read too; flags win.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeJwt } from 'jose';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { FundingResult } from '../domain/funding.ts';
import { saveLinkWithTokens } from '../lib/links.ts';
import { archiveDir, findSecretLeaks, historiesDir, historyFile, historyNames, type HistoryName } from '../test/support/replay-histories.ts';
import { startReplayStack, type ReplayStack } from '../test/support/replay-stack.ts';

interface Secret {
  name: string;
  value: string;
}

interface Captured {
  workflowId: string;
  result: FundingResult;
  /** Secrets this path handled, which its history must not contain. */
  secrets: Secret[];
  check?: (history: HistoryJson) => Promise<void> | void;
}

interface HistoryJson {
  events: Array<Record<string, unknown> & { eventType: string }>;
}

const { values: args } = parseArgs({
  options: {
    address: { type: 'string' },
    namespace: { type: 'string' },
    only: { type: 'string' },
    archive: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help) {
  process.stdout.write('usage: npm run histories:capture [-- --address HOST:PORT] [--namespace NAME] [--only name,name] [--archive LABEL]\n');
  process.exit(0);
}
const selected = (args.only?.split(',').map((name) => name.trim()) ?? [...historyNames]) as HistoryName[];
for (const name of selected) if (!historyNames.includes(name)) throw new Error(`unknown path ${name}; known: ${historyNames.join(', ')}`);
const archiveTo = args.archive === undefined ? undefined : path.join(archiveDir, args.archive);
if (archiveTo !== undefined && (!/^[\w.-]+$/.test(args.archive ?? '') || existsSync(archiveTo))) {
  throw new Error(`--archive needs a new label of letters, digits, . _ -: ${archiveTo} exists or the label is not one`);
}

const step = (line: string) => process.stdout.write(`• ${line}\n`);
const fail = (message: string): never => {
  throw new Error(message);
};

// Core's INFO lines (worker started, polling) drown the steps; warnings still show. No shutdown
// signals for the runtime: the handler in main() stops the worker, then what it depends on.
Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });

const activityTypes = (history: HistoryJson) =>
  history.events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined;
    return attributes?.activityType?.name ? [attributes.activityType.name] : [];
  });
const expectActivities = (history: HistoryJson, must: string[], mustNot: string[] = []) => {
  const types = activityTypes(history);
  for (const type of must) if (!types.includes(type)) fail(`expected activity ${type}, history has ${types.join(', ')}`);
  for (const type of mustNot) if (types.includes(type)) fail(`expected no activity ${type}, history has ${types.join(', ')}`);
};
const expectOutcome = (result: FundingResult, status: string, errorCode: string | null) => {
  if (result.status !== status || result.errorCode !== errorCode) {
    fail(`expected ${status}/${errorCode ?? 'no code'}, the workflow returned ${result.status}/${result.errorCode ?? 'no code'}`);
  }
};

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

let interrupted = false;

async function main() {
  const starting = startReplayStack({
    temporalAddress: args.address ?? process.env.TEMPORAL_ADDRESS,
    namespace: args.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default',
    databaseUrl: process.env.DATABASE_URL,
    log: step,
  });
  // Ctrl-C also reaches PostgreSQL and Temporal (same process group): a start cut short fails and
  // undoes itself; a started stack is closed here. Repeats are ignored: tsx relays the signal a
  // second time when this process is slow to acknowledge it, and that must not skip the cleanup.
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write('\ninterrupted: cleaning up\n');
    void starting.then((stack) => stack.close(), () => undefined).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const stack = await starting;
  if (interrupted) return;
  try {
    await stack.startWorker();
    step(`worker on task queue ${stack.taskQueue}`);
    const baseSecrets: Secret[] = [
      { name: 'the transfer API key', value: stack.sandbox.partner.transferApiKey },
      { name: 'the client secret', value: stack.sandbox.partner.clientSecret },
    ];
    const outputs = new Map<HistoryName, string>();
    for (const name of selected) {
      if (interrupted) return;
      const { captured, json, events } = await withTimeout(captureHistory(stack, name, baseSecrets), 90_000, name).catch((error: Error) => {
        throw new Error(`${name}: ${error.message}`, { cause: error });
      });
      outputs.set(name, `${json}\n`);
      step(`${name}: ${captured.result.status}${captured.result.errorCode ? `/${captured.result.errorCode}` : ''}, ${events} events`);
    }
    // Written only once every path succeeded: a failed run leaves the stored histories as they were.
    if (interrupted) return;
    await mkdir(historiesDir, { recursive: true });
    if (archiveTo) {
      // Workflows started on the old code may still be running: their histories keep replaying.
      await mkdir(archiveTo, { recursive: true });
      for (const name of outputs.keys()) if (existsSync(historyFile(name))) await rename(historyFile(name), path.join(archiveTo, `${name}.json`));
      step(`kept the replaced histories in ${path.relative(process.cwd(), archiveTo)}`);
    }
    for (const [name, json] of outputs) await writeFile(historyFile(name), json);
    step(`wrote ${outputs.size} histories to ${historiesDir}`);
  } finally {
    if (!interrupted) await stack.close();
  }
}

/** Runs one path and returns its history as JSON, checked: the path it took, no secret in it. */
async function captureHistory(stack: ReplayStack, name: HistoryName, baseSecrets: Secret[]) {
  const captured = await capture(stack, name);
  // historyToJSON writes the Temporal CLI/UI export format, which historyFromJSON (and so
  // Worker.runReplayHistories) reads back.
  const json = historyToJSON(await stack.fetchHistory(captured.workflowId));
  const parsed = JSON.parse(json) as HistoryJson;
  await captured.check?.(parsed);
  const leaks = findSecretLeaks(parsed, [...baseSecrets, ...captured.secrets]);
  if (leaks.length > 0) fail(`the history contains ${leaks.join('; ')}: nothing written`);
  return { captured, json, events: parsed.events.length };
}

async function postFunding(stack: ReplayStack, body: unknown): Promise<{ fundingId: string; workflowId: string }> {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `capture-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { fundingId?: string };
  if (response.status !== 202 || !answer.fundingId) fail(`POST /ops/fundings: ${response.status} ${JSON.stringify(answer)}`);
  const fundingId = answer.fundingId as string;
  const { workflowId } = await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { workflowId: true } });
  return { fundingId, workflowId };
}

async function result(stack: ReplayStack, workflowId: string): Promise<FundingResult> {
  return (await stack.result(workflowId)) as FundingResult;
}

const amount = (value: string) => ({ currency: 'PHP', value });

/** A sandbox user and a fresh cash-in code; the code is a secret of the path. */
async function codeFor(stack: ReplayStack, user: { kycLevel: 'KYC0' | 'KYC1'; blocked?: boolean }) {
  const created = await stack.admin.createUser({ balance: '100.00', ...user });
  const { code } = await stack.admin.cashInCode(created.userId);
  return { code, secrets: [{ name: 'the cash-in code', value: code }] };
}

async function fundByCode(stack: ReplayStack, user: { kycLevel: 'KYC0' | 'KYC1'; blocked?: boolean }, value: string) {
  const { code, secrets } = await codeFor(stack, user);
  const { workflowId } = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount(value) });
  return { workflowId, result: await result(stack, workflowId), secrets };
}

async function capture(stack: ReplayStack, name: HistoryName): Promise<Captured> {
  switch (name) {
    case 'code-approved': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '100.50');
      expectOutcome(captured.result, 'APPROVED', null);
      return { ...captured, check: (history) => expectActivities(history, ['createTransfer', 'executeTransfer'], ['retrieveTransfer', 'markReconciling']) };
    }
    case 'token-approved-with-refresh': {
      const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
      const issued = await stack.admin.embeddedTokens(user.userId);
      const { linkId } = await saveLinkWithTokens(stack.database, stack.tokens, {
        partnerUserId: `wallet:${user.profileId}`,
        profileId: user.profileId,
        maskedUserId: null,
        kind: 'EMBEDDED',
        scopes: ['openid'],
        requestReferenceNo: null,
        tokens: {
          accessToken: issued.accessToken,
          refreshToken: issued.refreshToken,
          // walletflow believes the access token expired: the vault refreshes it inside createTransfer.
          accessTokenExpiresAt: new Date(Date.now() - 1000),
          refreshTokenExpiresAt: new Date((decodeJwt(issued.refreshToken).exp ?? 0) * 1000),
        },
      });
      const { workflowId } = await postFunding(stack, { recipient: { type: 'TOKEN', linkId }, amount: amount('10.00') });
      const outcome = await result(stack, workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      const refreshes = (await stack.admin.ledger()).refreshes.filter((refresh) => refresh.userId === user.userId);
      if (refreshes.length !== 1) fail(`expected one token refresh, the sandbox saw ${refreshes.length}`);
      const current = await stack.tokens.read(stack.database, linkId);
      if (!current || current.accessToken === issued.accessToken) fail('the link kept its old access token: no refresh happened');
      return {
        workflowId,
        result: outcome,
        secrets: [
          { name: 'the issued access token', value: issued.accessToken },
          { name: 'the issued refresh token', value: issued.refreshToken },
          { name: 'the refreshed access token', value: current!.accessToken },
          { name: 'the refreshed refresh token', value: current!.refreshToken },
        ],
      };
    }
    case 'm133-rejected': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC0' }, '5.00');
      expectOutcome(captured.result, 'REJECTED', 'M133');
      return { ...captured, check: (history) => expectActivities(history, ['createTransfer'], ['beginExecute', 'executeTransfer']) };
    }
    case 'declined': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC1', blocked: true }, '5.00');
      expectOutcome(captured.result, 'DECLINED', '6002');
      return { ...captured, check: (history) => expectActivities(history, ['executeTransfer'], ['retrieveTransfer']) };
    }
    case 'execute-unknown-reconciled': {
      await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
      try {
        const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '7.00');
        expectOutcome(captured.result, 'APPROVED', null);
        return { ...captured, check: (history) => expectActivities(history, ['executeTransfer', 'markReconciling', 'retrieveTransfer']) };
      } finally {
        await stack.admin.clearFaults();
      }
    }
    case 'processing-polled': {
      await stack.admin.settings({ processingDelayMs: 1500 });
      try {
        const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '3.00');
        expectOutcome(captured.result, 'APPROVED', null);
        return {
          ...captured,
          check: (history) => {
            expectActivities(history, ['executeTransfer', 'retrieveTransfer'], ['markReconciling']);
            if (!history.events.some((event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED')) fail('expected a durable timer between polls');
          },
        };
      } finally {
        await stack.admin.settings({ processingDelayMs: 0 });
      }
    }
    case 'cancelled': {
      // No worker: the workflow waits on its task queue while ops cancels the funding.
      await stack.stopWorker();
      let captured: { workflowId: string; secrets: Secret[] };
      try {
        const { code, secrets } = await codeFor(stack, { kycLevel: 'KYC1' });
        const posted = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount('4.00') });
        const cancelled = await stack.opsFetch(`/ops/fundings/${posted.fundingId}/cancel`, { method: 'POST' });
        if (cancelled.status !== 200) fail(`cancel: ${cancelled.status} ${await cancelled.text()}`);
        captured = { workflowId: posted.workflowId, secrets };
      } finally {
        await stack.startWorker();
      }
      const outcome = await result(stack, captured.workflowId);
      expectOutcome(outcome, 'FAILED', 'CANCELLED');
      return { ...captured, result: outcome, check: (history) => expectActivities(history, ['loadFunding', 'finishFunding'], ['markCreating', 'createTransfer']) };
    }
  }
}

main().then(
  () => {
    if (!interrupted) process.exit(0);
  },
  (error: Error) => {
    // Interrupted: the signal handler is closing the stack and exits when done.
    if (interrupted) return;
    process.stderr.write(`histories:capture failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  },
);
