// The soak's funding batches (docs/reliability.md): batches of 500 to 2,000 items sent as CSV
// files while the chaos runs, each approved by the second key, and every third one paused and
// resumed midway, every third one cancelled midway. About half of each batch's items are paid by
// TOKEN, each to a wallet linked just before with an access token walletflow believes expired, so
// every such item refreshes its link under the chaos (token refresh at volume). Their items join
// the soak's fundings in the final check (harness/soak-invariants.ts: nothing executed twice, every
// executed item APPROVED or DECLINED or resolved from review); at every check during the run, each
// batch's held amount equals the sum of its open items' amounts, and at the end its counts equal
// its items' states and every TOKEN item's link is ACTIVE unless a worker killed mid-refresh lost
// its rotated pair.
import { randomUUID } from 'node:crypto';
import type { Database } from '../lib/database.ts';
import { finalStatusLiterals } from '../fundings/funding-record.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';
import { createExpiredLinks, type ExpiredLink } from './expired-links.ts';
import type { OpsClient } from './soak-driver.ts';
import type { Expected, Violation } from './soak-invariants.ts';

export type BatchAction = 'run' | 'pause-resume' | 'cancel';

export interface SoakBatch {
  index: number;
  size: number;
  action: BatchAction;
  /** Per reference: the item's recipient kind's expected outcome. */
  expected: Map<string, Expected>;
  /** Per reference of a TOKEN item: the link it pays (its access token expired when linked). */
  tokenLinks: Map<string, ExpiredLink>;
  /**
   * Its upload went out to walletflow: from then on its items count as asked for. A batch that
   * failed before (its links or codes not made) is the batch's failure, not lost requests.
   */
  sent?: boolean;
  batchId?: string;
  finalState?: string;
  /** What happened to it, for the report. */
  notes: string[];
  error?: string;
}

/** The batches' items walletflow was asked for: those of the batches whose upload went out. */
export const itemsSent = (batches: readonly SoakBatch[]): number =>
  batches.reduce((sum, batch) => sum + (batch.sent ? batch.size : 0), 0);

interface Recipient {
  userId: string;
  expected: Expected;
}

/** Recipients: mostly upgraded wallets (APPROVED); a few not upgraded (REJECTED M133) and blocked (DECLINED 6002). */
export async function planBatches(
  admin: SandboxAdminClient,
  options: { batches: number; minItems: number; maxItems: number; random: () => number },
): Promise<{ batches: SoakBatch[]; recipients: Recipient[] }> {
  const recipients: Recipient[] = [];
  for (let index = 0; index < 40; index += 1) {
    const kind = index < 34 ? 'ok' : index < 37 ? 'm133' : 'declined';
    const user = await admin.createUser({
      mobile: `+63970${String(index).padStart(5, '0')}`,
      kycLevel: kind === 'm133' ? 'KYC0' : 'KYC1',
      balance: '0.00',
      walletLimit: '900000000.00',
      ...(kind === 'declined' ? { blocked: true } : {}),
    });
    recipients.push({
      userId: user.userId,
      expected:
        kind === 'ok'
          ? { status: 'APPROVED', code: null }
          : kind === 'm133'
            ? { status: 'REJECTED', code: 'M133' }
            : { status: 'DECLINED', code: '6002' },
    });
  }
  const actions: BatchAction[] = ['run', 'pause-resume', 'cancel'];
  const batches = Array.from({ length: options.batches }, (_, index) => ({
    index,
    size: options.minItems + Math.floor(options.random() * (options.maxItems - options.minItems + 1)),
    action: actions[index % actions.length]!,
    expected: new Map<string, Expected>(),
    tokenLinks: new Map<string, ExpiredLink>(),
    notes: [],
  }));
  return { batches, recipients };
}

interface BatchView {
  batchId: string;
  state: string;
  total: { count: number; amount: { value: string } };
  counts: Record<string, number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const finalItem = (state: string) => !['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING'].includes(state);
const doneCount = (view: BatchView) =>
  Object.entries(view.counts).reduce((sum, [state, count]) => sum + (finalItem(state) ? count : 0), 0);

/**
 * Sends one batch (its codes and its TOKEN items' links made now), approves it with the second
 * key, pauses and resumes it or cancels it once about a quarter of its items are done, and waits
 * for its end state.
 */
export async function driveBatch(
  batch: SoakBatch,
  deps: {
    admin: SandboxAdminClient;
    recipients: Recipient[];
    ops: OpsClient;
    approver: OpsClient;
    /** The stack's database and TOKEN_ENCRYPTION_KEY: the TOKEN items' links are stored as onboarding stores them. */
    database: Database;
    tokenEncryptionKey: Buffer;
    random: () => number;
    deadline: number;
    log: (line: string) => void;
  },
): Promise<void> {
  const byToken = Array.from({ length: batch.size }, () => deps.random() < 0.5);
  // Linked just before the batch: the wallet's refresh tokens (20 minutes) must outlive it.
  const links = await createExpiredLinks(deps, { count: byToken.filter(Boolean).length });
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let item = 0; item < batch.size; item += 1) {
    const reference = `soak-${batch.index}-${String(item + 1).padStart(5, '0')}`;
    const amount = `${1 + Math.floor(deps.random() * 20)}.${String(Math.floor(deps.random() * 100)).padStart(2, '0')}`;
    if (byToken[item]) {
      const link = links.pop()!;
      batch.tokenLinks.set(reference, link);
      batch.expected.set(reference, { status: 'APPROVED', code: null });
      lines.push(`${reference},TOKEN,${link.linkId},${amount}`);
      continue;
    }
    const recipient = deps.recipients[Math.floor(deps.random() * deps.recipients.length)]!;
    const { code } = await deps.admin.cashInCode(recipient.userId);
    batch.expected.set(reference, recipient.expected);
    lines.push(`${reference},CODE,${code},${amount}`);
  }
  const call = <T>(
    client: OpsClient,
    method: 'GET' | 'POST',
    path: string,
    options: { csv?: string; idempotencyKey?: string } = {},
  ) => client.send<T>(method, path, { ...options, deadline: deps.deadline });
  batch.sent = true;
  const created = await call<BatchView & { code?: string }>(
    deps.ops,
    'POST',
    `/ops/funding-batches?name=soak-${batch.index}`,
    {
      csv: `${lines.join('\n')}\n`,
      idempotencyKey: `soak-batch-${randomUUID()}`,
    },
  );
  if (created.status !== 202)
    throw new Error(`batch ${batch.index}: POST answered ${created.status} ${created.body?.code ?? ''}`);
  batch.batchId = created.body.batchId;
  deps.log(
    `batch ${batch.index}: ${batch.size} items (${batch.tokenLinks.size} by TOKEN, every access token expired), ${created.body.total.amount.value} PHP, ${created.body.state} (${batch.action})`,
  );
  if (created.body.state === 'AWAITING_APPROVAL') {
    const approved = await call<BatchView>(deps.approver, 'POST', `/ops/funding-batches/${batch.batchId}/approve`);
    if (approved.status !== 200) throw new Error(`batch ${batch.index}: approve answered ${approved.status}`);
    batch.notes.push('approved by the second key');
  }
  let acted = batch.action === 'run';
  for (;;) {
    if (Date.now() > deps.deadline) throw new Error(`batch ${batch.index} not ended before the deadline`);
    const view = (await call<BatchView>(deps.ops, 'GET', `/ops/funding-batches/${batch.batchId}`)).body;
    if (view.state === 'COMPLETED' || view.state === 'CANCELLED' || view.state === 'REJECTED') {
      batch.finalState = view.state;
      deps.log(`batch ${batch.index}: ${view.state} ${JSON.stringify(view.counts)}`);
      return;
    }
    if (!acted && doneCount(view) >= batch.size / 4) {
      acted = true;
      if (batch.action === 'cancel') {
        const cancelled = await call<BatchView>(deps.ops, 'POST', `/ops/funding-batches/${batch.batchId}/cancel`);
        batch.notes.push(`cancel at ${doneCount(view)} done: ${cancelled.status}`);
      } else {
        const paused = await call<BatchView>(deps.ops, 'POST', `/ops/funding-batches/${batch.batchId}/pause`);
        batch.notes.push(`pause at ${doneCount(view)} done: ${paused.status}`);
        await sleep(5000);
        const resumed = await call<BatchView>(deps.ops, 'POST', `/ops/funding-batches/${batch.batchId}/resume`);
        batch.notes.push(`resume: ${resumed.status}`);
      }
      deps.log(`batch ${batch.index}: ${batch.notes.at(-1)}`);
    }
    await sleep(1000);
  }
}

/**
 * A batch's money at this instant, in one statement (one snapshot): what its items' open holds
 * hold, and the amounts of its items not final (in review keeps its hold).
 */
export async function checkBatchHolds(database: Database, batchIds: string[]): Promise<Violation[]> {
  if (batchIds.length === 0) return [];
  const rows = await database.$queryRaw<Array<{ batch_id: string; held: string; open: string }>>`
    SELECT b.id::text AS batch_id,
      (SELECT COALESCE(SUM(e.amount), 0) FROM funding f
         JOIN ledger_transaction h ON h.funding_id = f.id AND h.kind = 'HOLD'
         JOIN ledger_entry e ON e.transaction_id = h.id AND e.account = 'IN_FLIGHT'
         WHERE f.batch_id = b.id AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id))::text AS held,
      (SELECT COALESCE(SUM(f.amount), 0) FROM funding f
         WHERE f.batch_id = b.id AND f.status NOT IN (${finalStatusLiterals}))::text AS open
    FROM funding_batch b WHERE b.id = ANY(${batchIds}::uuid[])`;
  return rows
    .filter((row) => Number(row.held) !== Number(row.open))
    .map((row) => ({
      invariant: 'batch' as const,
      ids: [row.batch_id],
      detail: `batch holds ${row.held} PHP but its open items amount to ${row.open}`,
    }));
}

/** At the end: the batch view's counts equal its items' states, and its end state fits them. */
export async function checkBatchCounts(database: Database, batch: SoakBatch, view: BatchView): Promise<Violation[]> {
  const violations: Violation[] = [];
  const rows = await database.funding.groupBy({
    by: ['status', 'errorCode'],
    where: { batchId: batch.batchId! },
    _count: { _all: true },
  });
  const counts: Record<string, number> = {};
  for (const row of rows) {
    const state = row.status === 'FAILED' && row.errorCode === 'CANCELLED' ? 'CANCELLED' : row.status;
    counts[state] = (counts[state] ?? 0) + row._count._all;
  }
  const seen = new Set([...Object.keys(counts), ...Object.keys(view.counts)]);
  for (const state of seen) {
    if ((counts[state] ?? 0) !== (view.counts[state] ?? 0)) {
      violations.push({
        invariant: 'batch',
        ids: [batch.batchId!],
        detail: `the batch counts ${view.counts[state] ?? 0} ${state}, its items ${counts[state] ?? 0}`,
      });
    }
  }
  const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
  if (total !== batch.size)
    violations.push({
      invariant: 'batch',
      ids: [batch.batchId!],
      detail: `${total} items stored of ${batch.size} sent`,
    });
  if (view.state === 'CANCELLED' && (counts.PENDING ?? 0) > 0)
    violations.push({
      invariant: 'batch',
      ids: [batch.batchId!],
      detail: `cancelled with ${counts.PENDING} items PENDING`,
    });
  if (view.state === 'COMPLETED' && (counts.CANCELLED ?? 0) > 0)
    violations.push({
      invariant: 'batch',
      ids: [batch.batchId!],
      detail: `completed with ${counts.CANCELLED} items cancelled`,
    });
  if (batch.action !== 'cancel' && view.state !== 'COMPLETED')
    violations.push({ invariant: 'batch', ids: [batch.batchId!], detail: `ended ${view.state}, not COMPLETED` });
  return violations;
}

/** What the TOKEN items' links say once the batches ended. */
export interface TokenLinksCheck {
  links: number;
  /** Links the wallet refreshed exactly as often as walletflow stored a refresh. */
  kept: number;
  /**
   * Links whose rotated pair a worker killed mid-refresh lost (the wallet rotated, nothing was stored):
   * REAUTH_REQUIRED, a documented limit.
   */
  stranded: number;
  violations: Violation[];
}

/**
 * The TOKEN items' links (docs/token-refresh-lock.md). A link the wallet refreshed more often than
 * walletflow stored a refresh lost a rotated pair: a worker killed between the wallet's answer and
 * the commit, which the lock cannot prevent; such a link needs its user again, and its item is
 * expected to end FAILED REAUTH_REQUIRED with nothing sent. A link that is not ACTIVE without such
 * a loss is a violation (a pair lost by walletflow itself), and so is a link walletflow refreshed
 * while the wallet shows fewer refreshes.
 */
export async function checkTokenLinks(
  database: Database,
  walletRefreshes: ReadonlyArray<{ userId: string }>,
  batches: SoakBatch[],
): Promise<TokenLinksCheck> {
  const atWallet = new Map<string, number>();
  for (const refresh of walletRefreshes) atWallet.set(refresh.userId, (atWallet.get(refresh.userId) ?? 0) + 1);
  const all = batches.flatMap((batch) =>
    [...batch.tokenLinks.entries()].map(([reference, link]) => ({ batch, reference, link })),
  );
  const linkIds = all.map((entry) => entry.link.linkId);
  const statuses = new Map(
    (await database.link.findMany({ where: { id: { in: linkIds } }, select: { id: true, status: true } })).map(
      (row) => [row.id, row.status],
    ),
  );
  const stored = new Map(
    (
      await database.linkEvent.groupBy({
        by: ['linkId'],
        where: { linkId: { in: linkIds }, type: 'TOKEN_REFRESHED' },
        _count: { _all: true },
      })
    ).map((row) => [row.linkId, row._count._all]),
  );
  const check: TokenLinksCheck = { links: all.length, kept: 0, stranded: 0, violations: [] };
  for (const { batch, reference, link } of all) {
    const wallet = atWallet.get(link.userId) ?? 0;
    const kept = stored.get(link.linkId) ?? 0;
    const status = statuses.get(link.linkId);
    if (kept > wallet) {
      check.violations.push({
        invariant: 'batch',
        ids: [link.linkId],
        detail: `link ${link.linkId} stores ${kept} refreshes, the wallet made ${wallet}`,
      });
    } else if (kept === wallet && status === 'ACTIVE') {
      check.kept += 1;
    } else if (wallet > kept) {
      // A rotation lost to a killed worker; the link finds out at its next refresh, and its item with it.
      check.stranded += 1;
      if (status !== 'ACTIVE') batch.expected.set(reference, { status: 'FAILED', code: 'REAUTH_REQUIRED' });
    } else {
      check.violations.push({
        invariant: 'batch',
        ids: [link.linkId],
        detail: `link ${link.linkId} is ${status ?? 'gone'} with every rotation the wallet made stored (${kept})`,
      });
    }
  }
  return check;
}

/** The batch's view, for the final check. */
export async function batchView(ops: OpsClient, batchId: string, deadline: number): Promise<BatchView> {
  return (await ops.send<BatchView>('GET', `/ops/funding-batches/${batchId}`, { deadline })).body;
}
