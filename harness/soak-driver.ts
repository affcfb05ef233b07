// The soak's load: seeded plan of fundings and payments, sandbox users, recipients made just in
// time (cash-in codes; links through the real session URL), requests posted with an Idempotency-Key
// that is repeated on connection errors and 5xx, and ops' part: reviews resolved from the ledger.
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import type { FundingView } from '../domain/funding.ts';
import type { PaymentView } from '../domain/payment.ts';
import type { Database } from '../lib/database.ts';
import { hashBearer } from '../links/embedded-sessions.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../sandbox/admin-client.ts';
import type { Expected } from './soak-invariants.ts';

export type FundingKind = 'code-approved' | 'token-approved' | 'code-m133' | 'code-declined';
export type PaymentKind = 'pay-ok' | 'pay-insufficient';

export interface PlannedItem {
  index: number;
  side: 'funding' | 'payment';
  kind: FundingKind | PaymentKind;
  amount: string;
  expected: Expected;
  /** Sandbox user: the recipient of a funding, the payer of a payment. */
  userId: string;
  /** Filled in by the driver. */
  id?: string;
  postedAt?: number;
  error?: string;
}

export const merchantFee = '0.50';

const expectations: Record<FundingKind | PaymentKind, Expected> = {
  'code-approved': { status: 'APPROVED', code: null },
  'token-approved': { status: 'APPROVED', code: null },
  'code-m133': { status: 'REJECTED', code: 'M133' },
  'code-declined': { status: 'DECLINED', code: '6002' },
  'pay-ok': { status: 'SUCCEEDED', code: null },
  'pay-insufficient': { status: 'FAILED', code: 'INSUFFICIENT_BALANCE' },
};

/**
 * Mixes: half CODE approvals, a quarter TOKEN approvals, a tenth each M133 and 6002; a quarter of payments short of
 * balance.
 */
function fundingKind(r: number): FundingKind {
  if (r < 0.5) return 'code-approved';
  if (r < 0.75) return 'token-approved';
  if (r < 0.875) return 'code-m133';
  return 'code-declined';
}

/** The sandbox admin API as the soak and the bench use it: each answer waited for 30 s at most. */
export const sandboxAdmin = (sandboxUrl: string): SandboxAdminClient =>
  sandboxAdminClient(sandboxUrl, { timeoutMs: 30_000 });

export function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Plans the run and creates its sandbox users (recipients come later, just in time). */
export async function planRun(
  admin: SandboxAdminClient,
  options: { fundings: number; payments: number; random: () => number },
): Promise<PlannedItem[]> {
  const items: PlannedItem[] = [];
  const mobile = (index: number) => `+639${String(index).padStart(9, '0')}`;
  for (let index = 0; index < options.fundings; index += 1) {
    const kind = fundingKind(options.random());
    const amount = `${1 + Math.floor(options.random() * 500)}.${String(Math.floor(options.random() * 100)).padStart(2, '0')}`;
    const user = await admin.createUser({
      mobile: mobile(index),
      kycLevel: kind === 'code-m133' ? 'KYC0' : 'KYC1',
      balance: '0.00',
      ...(kind === 'code-declined' ? { blocked: true } : {}),
    });
    items.push({ index, side: 'funding', kind, amount, expected: expectations[kind], userId: user.userId });
  }
  for (let index = 0; index < options.payments; index += 1) {
    const kind: PaymentKind = options.random() < 0.75 ? 'pay-ok' : 'pay-insufficient';
    const amount = `${10 + Math.floor(options.random() * 90)}.${String(Math.floor(options.random() * 100)).padStart(2, '0')}`;
    const user = await admin.createUser({
      mobile: mobile(options.fundings + index),
      kycLevel: 'KYC1',
      balance: kind === 'pay-ok' ? '1000.00' : '5.00',
    });
    items.push({ index, side: 'payment', kind, amount, expected: expectations[kind], userId: user.userId });
  }
  return shuffle(items, options.random);
}

export interface DriverStats {
  /** Attempts repeated with the same Idempotency-Key (connection error, 5xx, 429). */
  retries: number;
  /** Session URL launches repeated (the API was down, onboarding failed). */
  relaunches: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function parseJson<T>(text: string): T {
  try {
    return (text === '' ? undefined : JSON.parse(text)) as T;
  } catch {
    return undefined as T;
  }
}

export interface OpsClient {
  /** `body` is sent as JSON, `csv` as text/csv. */
  send<T>(
    method: 'GET' | 'POST',
    path: string,
    options?: { body?: unknown; csv?: string; idempotencyKey?: string; actor?: string; deadline?: number },
  ): Promise<{ status: number; body: T }>;
}

/** The ops API with retries: connection errors, time-outs, 5xx and 429 repeat the same request (same key). */
export function opsClient(apiBase: string, opsKey: string, stats: DriverStats): OpsClient {
  return {
    async send<T>(
      method: 'GET' | 'POST',
      path: string,
      options: { body?: unknown; csv?: string; idempotencyKey?: string; actor?: string; deadline?: number } = {},
    ) {
      const body =
        options.csv !== undefined
          ? { type: 'text/csv', text: options.csv }
          : options.body === undefined
            ? undefined
            : { type: 'application/json', text: JSON.stringify(options.body) };
      const deadline = options.deadline ?? Date.now() + 300_000;
      let delay = 250;
      for (;;) {
        try {
          const response = await request(`${apiBase}${path}`, {
            method,
            headers: {
              authorization: `Bearer ${opsKey}`,
              ...(body ? { 'content-type': body.type } : {}),
              ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
              ...(options.actor ? { 'x-ops-actor': options.actor } : {}),
            },
            ...(body ? { body: body.text } : {}),
            headersTimeout: 30_000,
            bodyTimeout: 30_000,
          });
          const text = await response.body.text();
          if (response.statusCode < 500 && response.statusCode !== 429)
            return { status: response.statusCode, body: parseJson<T>(text) };
        } catch {
          // No answer (refused, reset, timed out): the same request again, with the same key.
        }
        if (Date.now() > deadline) throw new Error(`${method} ${path}: no answer but errors until the deadline`);
        stats.retries += 1;
        await sleep(delay);
        delay = Math.min(delay * 2, 3000);
      }
    },
  };
}

/**
 * A link for the user as the wallet app makes one: the sandbox launches the tile (calls the
 * session URL with fresh embedded tokens), the user lands on the landing page if onboarding is
 * slow, and the onboarding workflow links the profile. Launched again when it fails.
 */
export async function linkThroughSessionUrl(
  admin: SandboxAdminClient,
  database: Database,
  userId: string,
  stats: DriverStats,
  deadline: number,
): Promise<string> {
  for (let attempt = 0; ; attempt += 1) {
    if (Date.now() > deadline) throw new Error(`no link for user ${userId} before the deadline`);
    if (attempt > 0) {
      stats.relaunches += 1;
      await sleep(Math.min(500 * 2 ** attempt, 5000));
    }
    let launched;
    try {
      launched = await admin.call<{ sessionId?: string; landingUrl?: string; message?: string }>('POST', '/launch', {
        userId,
      });
    } catch {
      continue;
    }
    const { sessionId, landingUrl } = launched.body ?? {};
    if (launched.status !== 200 || !sessionId || !landingUrl) continue;
    const sessionIdHash = hashBearer(sessionId);
    const started = Date.now();
    let visited = false;
    while (Date.now() - started < 60_000) {
      const row = await database.embeddedSession.findUnique({
        where: { sessionIdHash },
        select: { status: true, linkId: true },
      });
      if (row?.status === 'READY' && row.linkId) return row.linkId;
      if (row?.status === 'FAILED') break;
      if (!visited && Date.now() - started > 3000) {
        // Onboarding is slow (its start may have failed): open the landing page as the user would;
        // it starts onboarding when the session URL could not.
        visited = true;
        await visitLanding(landingUrl).catch(() => undefined);
      }
      await sleep(250);
    }
  }
}

async function visitLanding(landingUrl: string): Promise<void> {
  // The landing URL's answer is the page itself: it waits briefly for onboarding and starts it if it is not running.
  const page = await request(landingUrl, { method: 'GET', headersTimeout: 30_000, bodyTimeout: 30_000 });
  await page.body.dump();
}

/** Posts one planned item (its recipient made now); records its walletflow id. */
export async function postItem(
  item: PlannedItem,
  deps: { admin: SandboxAdminClient; ops: OpsClient; database: Database; stats: DriverStats; deadline: number },
): Promise<void> {
  const amount = { currency: 'PHP', value: item.amount };
  let path: string;
  let body: unknown;
  if (item.side === 'payment') {
    const linkId = await linkThroughSessionUrl(deps.admin, deps.database, item.userId, deps.stats, deps.deadline);
    path = '/ops/payments';
    body = { linkId, amount };
  } else if (item.kind === 'token-approved') {
    const linkId = await linkThroughSessionUrl(deps.admin, deps.database, item.userId, deps.stats, deps.deadline);
    path = '/ops/fundings';
    body = { recipient: { type: 'TOKEN', linkId }, amount };
  } else {
    const { code } = await deps.admin.cashInCode(item.userId);
    path = '/ops/fundings';
    body = { recipient: { type: 'CODE', code }, amount };
  }
  const idempotencyKey = `soak-${randomUUID()}`;
  const answer = await deps.ops.send<FundingView & PaymentView & { code?: string }>('POST', path, {
    body,
    idempotencyKey,
    deadline: deps.deadline,
  });
  if (answer.status !== 202 && answer.status !== 200) {
    item.error = `POST ${path} answered ${answer.status} ${answer.body?.code ?? ''}`;
    return;
  }
  item.id = item.side === 'funding' ? answer.body.fundingId : answer.body.id;
  item.postedAt = Date.now();
}

/** Runs `work` over `items`, `concurrency` at a time. */
export async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next]!;
      next += 1;
      await work(item);
    }
  });
  await Promise.all(runners);
}

export interface ReviewRecord {
  kind?: 'payment' | 'funding';
  id: string;
  walletPaymentId: string | null;
  executions: number;
  outcome: 'SUCCEEDED' | 'FAILED' | 'APPROVED';
  at: number;
}

/**
 * How long a funding in review is left to the wallet before ops resolve it FAILED on an empty
 * ledger: longer than any late effect the soak's faults queue (harness/soak-chaos.ts).
 */
export const FUNDING_REVIEW_GRACE_MS = 30_000;

/**
 * Ops' part: every payment in NEEDS_REVIEW is resolved from the evidence an ops person has, the
 * wallet's ledger: one execution → SUCCEEDED, none → FAILED. Returns what it resolved this round.
 */
export async function resolveReviews(ops: OpsClient, admin: SandboxAdminClient): Promise<ReviewRecord[]> {
  return [...(await resolvePaymentReviews(ops, admin)), ...(await resolveFundingReviews(ops, admin))];
}

/**
 * Every funding in NEEDS_REVIEW is resolved from the wallet's ledger (contract section 11): its
 * transfer executed → APPROVED; not executed, and in review longer than any queued execute could
 * take to land → FAILED (nothing was credited). A younger one is left for the next round.
 */
async function resolveFundingReviews(ops: OpsClient, admin: SandboxAdminClient): Promise<ReviewRecord[]> {
  const listed = await ops.send<{ items: FundingView[] }>('GET', '/ops/fundings?status=NEEDS_REVIEW&limit=200', {
    deadline: Date.now() + 30_000,
  });
  if (listed.status !== 200 || listed.body.items.length === 0) return [];
  const ledger = await admin.ledger();
  const byId = new Map(ledger.transfers.map((transfer) => [transfer.transferId, transfer]));
  const resolved: ReviewRecord[] = [];
  for (const funding of listed.body.items) {
    const executions = funding.transferId ? (byId.get(funding.transferId)?.executions ?? 0) : 0;
    if (executions > 1) continue; // a double credit is not ops' to paper over: the checker reports it
    const since = Date.parse(
      funding.events.findLast((event) => event.status === 'NEEDS_REVIEW')?.at ?? funding.updatedAt,
    );
    if (executions === 0 && Date.now() - since < FUNDING_REVIEW_GRACE_MS) continue;
    const outcome = executions === 1 ? 'APPROVED' : 'FAILED';
    const note =
      executions === 1
        ? 'the wallet ledger shows the credit (1 execution)'
        : `no credit in the wallet ledger after ${FUNDING_REVIEW_GRACE_MS / 1000} s`;
    try {
      const answer = await ops.send<FundingView & { code?: string }>(
        'POST',
        `/ops/fundings/${funding.fundingId}/resolve`,
        {
          body: { outcome, note },
          actor: 'soak-reviewer',
          deadline: Date.now() + 30_000,
        },
      );
      if (answer.status === 200)
        resolved.push({
          kind: 'funding',
          id: funding.fundingId,
          walletPaymentId: funding.transferId,
          executions,
          outcome,
          at: Date.now(),
        });
    } catch {
      // No answer in time: listed again next round if still in review.
    }
  }
  return resolved;
}

async function resolvePaymentReviews(ops: OpsClient, admin: SandboxAdminClient): Promise<ReviewRecord[]> {
  const listed = await ops.send<{ items: PaymentView[] }>('GET', '/ops/payments?status=NEEDS_REVIEW&limit=200', {
    deadline: Date.now() + 30_000,
  });
  if (listed.status !== 200 || listed.body.items.length === 0) return [];
  const ledger = await admin.ledger();
  const byId = new Map(ledger.payments.map((payment) => [payment.paymentId, payment]));
  const resolved: ReviewRecord[] = [];
  for (const payment of listed.body.items) {
    const executions = payment.paymentId ? (byId.get(payment.paymentId)?.executions ?? 0) : 0;
    const outcome = executions === 1 ? 'SUCCEEDED' : 'FAILED';
    if (executions > 1) continue; // a double debit is not ops' to paper over: the checker reports it
    const note =
      executions === 1
        ? 'the wallet ledger shows the debit (1 execution)'
        : 'no debit in the wallet ledger (0 executions)';
    try {
      const answer = await ops.send<PaymentView & { code?: string }>('POST', `/ops/payments/${payment.id}/resolve`, {
        body: { outcome, note },
        actor: 'soak-reviewer',
        deadline: Date.now() + 30_000,
      });
      // 409: an earlier attempt went through and its answer was lost (the API restarted); the table counts from
      // walletflow's rows.
      if (answer.status === 200)
        resolved.push({
          kind: 'payment',
          id: payment.id,
          walletPaymentId: payment.paymentId,
          executions,
          outcome,
          at: Date.now(),
        });
    } catch {
      // No answer in time (the API or Temporal restarting): listed again next round if still in review.
    }
  }
  return resolved;
}
