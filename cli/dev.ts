// `walletflow dev`: the whole stack on embedded defaults. Each dependency whose variable is absent
// is started here (PostgreSQL, the Temporal dev server, the sandbox); migrations are applied, test
// users seeded (in the sandbox, and their partner balances and the treasury's float in the ledger),
// the worker and the API started with fully resolved configuration, and the URLs printed. Ctrl-C stops everything in
// order; data under .walletflow/ is reused by the next start.
import { randomBytes } from 'node:crypto';
import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import { sandboxPortFrom, startSandbox, type RunningSandbox } from '../sandbox/server.ts';
import { applyMigrations } from '../prisma/schema-engine.ts';
import {
  loadConfig,
  secretVariables,
  walletServiceVariables,
  withSecretFilesRead,
  walletUrlVariables,
  type AppConfig,
} from '../lib/config.ts';
import { startEmbeddedPostgres, type RunningPostgres } from '../stack/embedded-postgres.ts';
import { isListening, waitForPort } from '../stack/ports.ts';
import { resolveTemporalCli, startTemporalDevServer, type RunningTemporal } from '../stack/temporal-dev-server.ts';
import { apiEnvironment, serviceEnvironment, startTsChild, type ManagedChild } from '../stack/child-process.ts';
import { partnerEndpoints, sandboxWalletVariables } from '../stack/sandbox-wallet.ts';
import { onStopSignal } from '../stack/stop-signals.ts';
import { consoleStaff, startConsoleIdentity } from '../stack/console-identity.ts';
import { loadDevState, saveDevState } from './dev-state.ts';
import {
  seedDemoLink,
  seedPartnerBalances,
  seedTestUsers,
  TREASURY_FLOAT,
  writeSampleBatch,
  type SeededBalances,
  type SeededUser,
} from './seed-users.ts';
import { projectRoot } from '../lib/project-root.ts';
import { workflowBundleFile } from '../harness/workflow-bundle-file.ts';
import { tracedBundlePath } from '../lib/tracing-bundle.ts';
import { formatAmount, fromNumeric } from '../domain/money.ts';

const root = projectRoot;
const stateDir = path.resolve(process.env.WALLETFLOW_STATE_DIR ?? path.join(root, '.walletflow'));

const step = (message: string) => process.stdout.write(`• ${message}\n`);

/**
 * The demo's BATCH_APPROVAL_THRESHOLD, unless one is given: the sample batch (300 × 1.00) is above
 * it, so a batch uploaded as `maker` waits in AWAITING_APPROVAL until `checker` approves it, as the
 * README's walk-through says. Single fundings and the seeding's adjustments are not batches: it
 * never holds them.
 */
export const DEMO_BATCH_APPROVAL_THRESHOLD = '100.00';

export async function runDev(): Promise<void> {
  const config: AppConfig = loadConfig();
  // The caller's settings with its secrets' files read (NAME_FILE): what dev builds its own settings from.
  const given = withSecretFilesRead();
  const devState = await loadDevState(stateDir);
  const stops: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () => {
    stopping ??= (async () => {
      process.stdout.write('\nstopping walletflow dev...\n');
      for (const stop of stops.reverse()) {
        await stop().catch((error: Error) => process.stderr.write(`  stop failed: ${error.message}\n`));
      }
      process.stdout.write('stopped.\n');
    })();
    return stopping;
  };
  onStopSignal(() => void stopAll().then(() => process.exit(0)));

  try {
    // PostgreSQL
    let databaseUrl = config.databaseUrl;
    if (databaseUrl) {
      step('PostgreSQL: DATABASE_URL');
    } else {
      const port = Number(process.env.WALLETFLOW_POSTGRES_PORT ?? 54329);
      step(`PostgreSQL: embedded, data in ${path.relative(root, path.join(stateDir, 'postgres'))}, port ${port}`);
      const postgres: RunningPostgres = await startEmbeddedPostgres({ dataDir: path.join(stateDir, 'postgres'), port });
      stops.push(() => postgres.stop());
      databaseUrl = postgres.url;
    }
    const applied = await applyMigrations(databaseUrl);
    step(`migrations: ${applied.length === 0 ? 'up to date' : `applied ${applied.join(', ')}`}`);

    // Temporal
    let temporalAddress = config.temporal.address;
    let temporalUi: string | undefined;
    if (temporalAddress) {
      step(`Temporal: TEMPORAL_ADDRESS ${temporalAddress}`);
    } else {
      const port = Number(process.env.WALLETFLOW_TEMPORAL_PORT ?? 7233);
      const uiPort = Number(process.env.WALLETFLOW_TEMPORAL_UI_PORT ?? 8233);
      if (await isListening(port)) {
        throw new Error(
          `port ${port} is taken: stop what runs there, or set TEMPORAL_ADDRESS=127.0.0.1:${port} to use it`,
        );
      }
      step(
        `Temporal: CLI dev server on port ${port}, history in ${path.relative(root, path.join(stateDir, 'temporal.db'))}, Web UI on port ${uiPort}`,
      );
      const temporal: RunningTemporal = await startTemporalDevServer({
        binary: resolveTemporalCli(),
        dbFile: path.join(stateDir, 'temporal.db'),
        port,
        uiPort,
        namespace: config.temporal.namespace,
      });
      stops.push(() => temporal.stop());
      temporalAddress = temporal.address;
      temporalUi = temporal.uiUrl;
    }

    // Wallet service
    const apiBase = `http://127.0.0.1:${config.port}`;
    let walletEnv: NodeJS.ProcessEnv = {};
    let sandbox: RunningSandbox | undefined;
    let users: SeededUser[] = [];
    let demoLinkId: string | undefined;
    if (config.wallet) {
      step(`wallet service: ${config.wallet.connectUrl}, ${config.wallet.opUrl}, ${config.wallet.transferUrl}`);
    } else {
      const sandboxPort = sandboxPortFrom(process.env);
      step(`wallet service: built-in sandbox on port ${sandboxPort}`);
      const unused = walletServiceVariables.filter((name) => given[name]?.trim());
      if (unused.length > 0)
        step(
          `  not used without ${walletUrlVariables.join(', ')}: ${unused.join(', ')} (the sandbox's own registration applies)`,
        );
      sandbox = await startSandbox({
        port: sandboxPort,
        registration: {
          ...(devState.sandboxRegistration ?? {}),
          ...partnerEndpoints(apiBase),
        },
      });
      const running = sandbox;
      stops.push(() => running.close());
      await saveDevState(stateDir, { ...devState, sandboxRegistration: { ...sandbox.partner } });
      walletEnv = {
        ...sandboxWalletVariables(sandbox),
        SESSION_ALLOWED_IPS: process.env.SESSION_ALLOWED_IPS ?? sandbox.partner.senderIp,
      };
      users = await seedTestUsers(sandbox.url);
    }

    // The ops console's sign-in: the partner's identity provider when CONSOLE_OIDC_ISSUER is set,
    // else (with the sandbox) a sandbox identity provider with a maker, a checker, a reader and an admin.
    let consoleEnv: Record<string, string> = {};
    let consoleSignIn: DevSummary['console'] = config.console.oidc
      ? { kind: 'yours', issuer: config.console.oidc.issuer }
      : { kind: 'key' };
    if (sandbox && !config.console.oidc) {
      const idpPort = Number(process.env.WALLETFLOW_IDP_PORT ?? 4020);
      if (await isListening(idpPort))
        throw new Error(
          `port ${idpPort} is taken (the console's sandbox identity provider): stop what runs there, or set WALLETFLOW_IDP_PORT`,
        );
      const identity = await startConsoleIdentity(apiBase, idpPort);
      stops.push(() => identity.provider.close());
      consoleEnv = identity.env;
      consoleSignIn = { kind: 'sandbox', issuer: identity.provider.issuer };
      step(
        `console sign-in: sandbox identity provider on port ${idpPort} (${consoleStaff.map((member) => member.username).join(', ')})`,
      );
    }

    // With the built-in sandbox, two ops keys of this run only (never printed, gone with it): one
    // that may adjust accounts, to seed the partner balances, and a read-only one the sandbox's
    // launcher reads them with (docs/sandbox.md, "Partner balances on the launcher").
    const runKeys = sandbox
      ? {
          seed: `wf_dev_seed_${randomBytes(24).toString('base64url')}`,
          launcher: `wf_dev_launcher_${randomBytes(24).toString('base64url')}`,
        }
      : undefined;
    const opsApiKeys = [
      given.OPS_API_KEYS || devState.opsApiKey,
      ...(runKeys
        ? [`walletflow-dev-seed:accounts+admin+read:${runKeys.seed}`, `sandbox-launcher:read:${runKeys.launcher}`]
        : []),
    ];

    // BATCH_APPROVAL_THRESHOLD for the API and the worker: the one given, else the demo's.
    const batchApprovalThreshold =
      config.batches.approvalThreshold === null
        ? DEMO_BATCH_APPROVAL_THRESHOLD
        : formatAmount(config.batches.approvalThreshold, 'PHP');

    // Worker and API, with every default resolved.
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...walletEnv,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      OPS_API_KEYS: opsApiKeys.join(','),
      TOKEN_ENCRYPTION_KEY: given.TOKEN_ENCRYPTION_KEY ?? devState.tokenEncryptionKey,
      ...consoleEnv,
      // Each start may run new workflow code: its build becomes the current version, and the runs
      // pinned to the build before (whose worker stopped with the last run) move to it
      // (docs/changing-workflows.md).
      WORKER_PROMOTE: process.env.WORKER_PROMOTE ?? 'replace',
      ...(temporalUi && !process.env.TEMPORAL_UI_URL ? { TEMPORAL_UI_URL: temporalUi } : {}),
      // Readable log lines at a terminal; JSON when the output goes to a file or a pipe.
      LOG_FORMAT: process.env.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json'),
      BATCH_APPROVAL_THRESHOLD: batchApprovalThreshold,
    };
    // A secret dev sets itself (from the caller's file where one was given) replaces that file: a child given both
    // NAME and NAME_FILE exits 78. The caller's other NAME_FILEs stay files, out of the children's environment.
    for (const name of secretVariables) if (childEnv[name] !== undefined) delete childEnv[`${name}_FILE`];
    const firstUser = users[0];
    if (sandbox && firstUser && childEnv.TOKEN_ENCRYPTION_KEY) {
      demoLinkId = await seedDemoLink(sandbox.url, firstUser, databaseUrl, childEnv.TOKEN_ENCRYPTION_KEY);
    }
    // The workflows bundled once per version of the code (harness/workflow-bundle-file.ts), not at every start;
    // with tracing on, its traced twin beside it too, as `npm run build` writes them (lib/tracing-bundle.ts).
    if (!process.env.WORKFLOW_BUNDLE_PATH) {
      const plain = await workflowBundleFile();
      childEnv.WORKFLOW_BUNDLE_PATH = plain;
      if (config.tracing) {
        // Beside it by name already when both come from the sources' digest; made for this run alone, copied there.
        const traced = await workflowBundleFile({ tracing: true });
        if (traced !== tracedBundlePath(plain)) await copyFile(traced, tracedBundlePath(plain));
      }
    }
    const worker: ManagedChild = startTsChild('worker', 'worker/main.ts', serviceEnvironment(childEnv), root);
    stops.push(() => worker.stop());
    const api: ManagedChild = startTsChild('api', 'api/main.ts', apiEnvironment(childEnv), root);
    stops.push(() => api.stop());
    let childFailure: string | undefined;
    for (const child of [worker, api]) {
      void child.exited.then((code) => {
        if (stopping) return;
        childFailure = `${child.name} exited with code ${code}`;
        process.stderr.write(`walletflow dev: the ${childFailure}; stopping\n`);
        void stopAll().then(() => process.exit(1));
      });
    }
    await waitForPort(config.port, { timeoutMs: 60_000, failed: () => childFailure });

    let balances: SeededBalances | undefined;
    if (sandbox && runKeys) {
      try {
        balances = await seedPartnerBalances({ apiBase, opsKey: runKeys.seed, users });
        step(
          `ledger: treasury float ${TREASURY_FLOAT} PHP from CAPITAL, a partner balance for each test user (once; a restart posts nothing again)`,
        );
      } catch (error) {
        step(`ledger: not seeded (${(error as Error).message}); the stack runs without partner balances`);
      }
      const settings = await fetch(`${sandbox.url}/_sandbox/settings`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          partnerBalances: { accountsUrl: `${apiBase}/ops/accounts/`, opsKey: runKeys.launcher },
        }),
      });
      if (settings.status !== 200)
        step(`sandbox launcher: partner balances not configured (settings answered ${settings.status})`);
    }

    let sampleBatch: DevSummary['sampleBatch'];
    if (sandbox) {
      const file = path.join(stateDir, 'sample-batch.csv');
      try {
        const written = await writeSampleBatch(sandbox.url, users, file);
        sampleBatch = { file: path.relative(process.cwd(), file) || file, ...written };
      } catch (error) {
        step(`sample batch: not written (${(error as Error).message})`);
      }
    }

    printSummary({
      console: consoleSignIn,
      batchApproval: { threshold: batchApprovalThreshold, given: config.batches.approvalThreshold !== null },
      sampleBatch,
      apiBase,
      temporalUi,
      sandbox,
      users,
      balances,
      demoLinkId,
      // Printed only when generated here: a key the operator gave stays off the terminal and its scrollback.
      opsApiKey: given.OPS_API_KEYS ? { generated: false } : { generated: true, key: devState.opsApiKey },
      workerMetrics: config.workerMetricsPort > 0 ? `http://127.0.0.1:${config.workerMetricsPort}/metrics` : undefined,
    });
  } catch (error) {
    process.stderr.write(`walletflow dev: ${(error as Error).message}\n`);
    await stopAll();
    process.exit(1);
  }
}

export interface DevSummary {
  apiBase: string;
  temporalUi: string | undefined;
  sandbox: RunningSandbox | undefined;
  users: SeededUser[];
  /** The ledger as seeded: the treasury's and each user's available now; absent: not seeded. */
  balances?: SeededBalances | undefined;
  demoLinkId: string | undefined;
  /** The ops key, when `walletflow dev` generated it (never one it was given). */
  opsApiKey: { generated: true; key: string } | { generated: false };
  workerMetrics: string | undefined;
  /**
   * A CSV of a few hundred items to fresh cash-in codes, for `walletflow batches create` and the console: its path,
   * items and total (PHP).
   */
  sampleBatch?: { file: string; items: number; total: string } | undefined;
  /** BATCH_APPROVAL_THRESHOLD (PHP) of this run: the demo's, or the one it was given. */
  batchApproval?: { threshold: string; given: boolean } | undefined;
  /** How staff sign in to the console: the sandbox identity provider's staff, the partner's provider, or an ops key. */
  console?: { kind: 'sandbox' | 'yours'; issuer: string } | { kind: 'key' };
}

/** How to open the ops console and sign in. */
function consoleLines(summary: DevSummary): string[] {
  const at = `  ops console      ${summary.apiBase}/console`;
  if (summary.console?.kind === 'sandbox') {
    return [
      `${at}   (sign in through the sandbox identity provider, ${summary.console.issuer})`,
      ...consoleStaff.map(
        (member) => `    ${member.username.padEnd(8)} password ${member.password}   ${member.name}: ${member.role}`,
      ),
    ];
  }
  if (summary.console?.kind === 'yours') return [`${at}   (sign in through ${summary.console.issuer})`];
  return [`${at}   (sign in with an ops key)`];
}

/** The batch approval threshold of this run, and how the sandbox's staff try it. */
function batchApprovalLines(summary: DevSummary): string[] {
  if (!summary.batchApproval) return [];
  const { threshold, given } = summary.batchApproval;
  const tryIt = summary.console?.kind === 'sandbox' ? ': upload one as maker, approve it as checker' : '';
  return [
    `  batch approval   a batch of ${threshold} PHP or more waits for another person's approval (BATCH_APPROVAL_THRESHOLD, ${given ? 'yours' : 'set for this demo'})${tryIt}`,
  ];
}

/** The sample batch's `try it` lines: how to run it, and whether it waits for approval. */
function sampleBatchLines(summary: DevSummary): string[] {
  const sample = summary.sampleBatch;
  if (!sample) return [];
  const lines = [
    `    a funding batch:       npx walletflow batches create --file ${sample.file}   then   npx walletflow batches watch <batchId>   (${sample.items} items, ${sample.total} PHP; codes valid 30 minutes)`,
  ];
  if (summary.batchApproval && fromNumeric(sample.total) >= fromNumeric(summary.batchApproval.threshold)) {
    const where = summary.console?.kind === 'sandbox' ? ' (in the console, as checker)' : '';
    lines.push(
      `                           ${sample.total} PHP is at or above the approval threshold: the batch waits until another person approves it${where}`,
    );
  }
  return lines;
}

function printSummary(summary: DevSummary): void {
  process.stdout.write(`${devSummaryLines(summary).join('\n')}\n\n`);
}

/** What `walletflow dev` prints once the stack is up. */
export function devSummaryLines(summary: DevSummary): string[] {
  const bearer = summary.opsApiKey.generated ? summary.opsApiKey.key : '<your ops API key>';
  const lines = [
    '',
    'walletflow is running. Ctrl-C stops everything.',
    '',
    `  API              ${summary.apiBase}   (health: ${summary.apiBase}/healthz, readiness: ${summary.apiBase}/readyz)`,
    summary.opsApiKey.generated
      ? `  ops API key      ${summary.opsApiKey.key}   (generated for this machine; Authorization: Bearer …)`
      : '  ops API key      yours, from OPS_API_KEYS (not printed)',
    `  metrics          ${summary.apiBase}/metrics${summary.workerMetrics ? `, worker ${summary.workerMetrics}` : ''}`,
    ...consoleLines(summary),
    ...batchApprovalLines(summary),
  ];
  if (summary.temporalUi) lines.push(`  Temporal UI      ${summary.temporalUi}`);
  if (summary.sandbox) {
    const { partner, connectUrl, url } = summary.sandbox;
    const firstMobile = summary.users[0]?.mobile ?? '';
    const login = new URL(`${connectUrl}/authorize`);
    login.search = new URLSearchParams({
      response_type: 'code',
      client_id: partner.clientId,
      redirect_uri: partner.redirectUri,
      prompt: 'login',
      user_id: firstMobile,
      state: 'dev-demo',
    }).toString();
    lines.push(
      `  sandbox          ${url}/_sandbox/   (admin API under ${url}/_sandbox/)`,
      `  sandbox login    ${login.toString()}`,
      `  wallet launcher  ${url}/_sandbox/launcher`,
      '',
      '  test users (one-time password on the sandbox login page: 123456)',
      ...summary.users.map(
        (user) =>
          `    ${user.mobile.padEnd(13)} password ${user.password.padEnd(12)} ${user.kycLevel}  balance ${user.balance.padStart(9)} PHP  ${user.name}  (userId ${user.userId})`,
      ),
      ...(summary.balances
        ? [
            '',
            `  partner ledger   treasury ${summary.balances.treasury} PHP available (float ${TREASURY_FLOAT} from CAPITAL)`,
            ...summary.users.map(
              (user) =>
                `    ${user.name.padEnd(13)} partner balance ${(summary.balances?.users.get(user.partnerUserId) ?? '?').padStart(9)} PHP  (${user.partnerUserId})`,
            ),
            `    see them in the launcher (${summary.sandbox.url}/_sandbox/launcher) or: curl -s ${summary.apiBase}/ops/accounts/TREASURY -H 'Authorization: Bearer ${bearer}'`,
          ]
        : []),
      '',
      '  try it',
      `    a cash-in code for ${summary.users[0]?.name ?? 'a user'}:  curl -s -X POST ${url}/_sandbox/users/${summary.users[0]?.userId ?? '<userId>'}/cash-in-codes`,
      '    fund by code:          npx walletflow fund --code --amount 100.50   (asks for the 7-digit code)',
      ...(summary.demoLinkId
        ? [`    fund by link:          npx walletflow fund --link ${summary.demoLinkId} --amount 25.00`]
        : []),
      `    not upgraded (M133):   a code of ${summary.users[1]?.name ?? 'the KYC0 user'} (userId ${summary.users[1]?.userId ?? '?'})`,
      `    link a wallet:         curl -s -X POST ${summary.apiBase}/ops/links/login-urls -H 'Authorization: Bearer ${bearer}' -H 'Content-Type: application/json' -d '{"partnerUserId":"demo","mobile":"${summary.users[0]?.mobile ?? ''}"}'   (open the url it answers)`,
      ...sampleBatchLines(summary),
      `    follow fundings:       ${summary.temporalUi ?? 'the Temporal UI'} (search: WalletflowStatus="APPROVED")`,
    );
  }
  return lines;
}
