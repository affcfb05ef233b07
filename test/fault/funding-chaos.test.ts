// Exactly-once under faults: 100 fundings (CODE and TOKEN, some M133, some declined) while the
// sandbox loses answers, fails after effects, answers 7011, 5xx and slowly, and the worker
// process is killed (SIGKILL) and restarted twice mid-batch. Afterwards every funding is final
// and the sandbox ledger agrees with walletflow's records, transfer by transfer.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFinalFundingStatus, type FundingView } from '../../domain/funding.ts';
import { addAmounts } from '../../domain/money.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process.ts';

let stack: PartnerStack;
let worker: WorkerProcess | undefined;

function startWorker(): WorkerProcess {
  return startWorkerProcess(stack.workerEnv());
}

async function killWorker(signal: NodeJS.Signals): Promise<void> {
  const stopping = worker;
  worker = undefined;
  await stopping?.stop(signal);
}

beforeAll(async () => {
  stack = await startPartnerStack();
  worker = startWorker();
});

afterAll(async () => {
  await killWorker('SIGTERM');
  await stack?.admin.clearFaults().catch(() => undefined);
  await stack?.close();
});

type Kind = 'code-approved' | 'code-m133' | 'code-declined' | 'token-approved';

interface Planned {
  kind: Kind;
  body: unknown;
  value: string;
}

async function plan(): Promise<Planned[]> {
  const kinds: Kind[] = [
    ...Array<Kind>(55).fill('code-approved'),
    ...Array<Kind>(10).fill('code-m133'),
    ...Array<Kind>(10).fill('code-declined'),
    ...Array<Kind>(25).fill('token-approved'),
  ];
  const planned: Planned[] = [];
  for (const [index, kind] of kinds.entries()) {
    const value = `${1 + (index % 9)}.${String(index % 100).padStart(2, '0')}`;
    const amount = { currency: 'PHP', value };
    if (kind === 'token-approved') {
      const { linkId } = await createEmbeddedLink(
        stack,
        { kycLevel: 'KYC1', balance: '0.00' },
        { partnerUserId: (user) => `chaos-${user.userId}` },
      );
      planned.push({ kind, value, body: { recipient: { type: 'TOKEN', linkId }, amount } });
    } else {
      const user = await stack.admin.createUser({
        kycLevel: kind === 'code-m133' ? 'KYC0' : 'KYC1',
        balance: '0.00',
        ...(kind === 'code-declined' ? { blocked: true } : {}),
      });
      const { code } = await stack.admin.cashInCode(user.userId);
      planned.push({ kind, value, body: { recipient: { type: 'CODE', code }, amount } });
    }
  }
  return planned;
}

async function post(body: unknown): Promise<string> {
  const key = randomUUID();
  for (;;) {
    const response = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    if (response.status === 202 || response.status === 200) return ((await response.json()) as FundingView).fundingId;
    // Refused for load: sent again with its key after Retry-After, as a partner would.
    const retryAfter = Number(response.headers.get('retry-after'));
    if ((response.status === 503 || response.status === 429) && retryAfter >= 1) {
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      continue;
    }
    throw new Error(`POST /ops/fundings answered ${response.status}: ${await response.text()}`);
  }
}

describe('fundings under faults and worker kills', () => {
  it('end final, with exactly one execution per executed funding and the ledger in agreement', async () => {
    const planned = await plan();
    await stack.admin.setFaults(
      [
        { endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 0.3 },
        { endpoint: 'transfers.execute', mode: 'temporary-failure', rate: 0.05 },
        { endpoint: 'transfers.create', mode: 'reset-after-effect', rate: 0.2 },
        { endpoint: 'transfers.create', mode: 'error-before-effect', rate: 0.05 },
        { endpoint: 'transfers.create', mode: 'latency', rate: 0.2, delayMs: 50 },
        { endpoint: 'transfers.retrieve', mode: 'temporary-failure', rate: 0.1 },
        { endpoint: 'transfers.retrieve', mode: 'error-before-effect', rate: 0.1 },
        { endpoint: 'transfers.retrieve', mode: 'garbage-body', rate: 0.05 },
      ],
      20261122,
    );

    const fundingIds: string[] = new Array(planned.length);
    const kill = async (after: number) => {
      while (fundingIds.filter(Boolean).length < after) await new Promise((resolve) => setTimeout(resolve, 50));
      await killWorker('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 300));
      worker = startWorker();
    };
    const kills = Promise.all([kill(25).then(() => kill(70))]);
    // Ten requests at a time, as a busy ops team would.
    for (let start = 0; start < planned.length; start += 10) {
      const batch = planned.slice(start, start + 10);
      const ids = await Promise.all(batch.map((item) => post(item.body)));
      ids.forEach((id, offset) => (fundingIds[start + offset] = id));
    }
    await kills;

    const deadline = Date.now() + 240_000;
    let rows = await stack.database.funding.findMany({ where: { id: { in: fundingIds } } });
    while (rows.some((row) => !isFinalFundingStatus(row.status))) {
      if (Date.now() > deadline) {
        const stuck = rows.filter((row) => !isFinalFundingStatus(row.status)).map((row) => `${row.id} ${row.status}`);
        throw new Error(
          `fundings not final: ${stuck.join(', ')}\nworker output:\n${worker?.output().slice(-3000) ?? ''}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      rows = await stack.database.funding.findMany({ where: { id: { in: fundingIds } } });
    }
    await stack.admin.clearFaults();

    const ledger = await stack.admin.ledger();
    const ledgerById = new Map(ledger.transfers.map((transfer) => [transfer.transferId, transfer]));
    const byId = new Map(rows.map((row) => [row.id, row]));

    // Expected outcomes per kind.
    planned.forEach((item, index) => {
      const row = byId.get(fundingIds[index]!)!;
      const expected = {
        'code-approved': 'APPROVED',
        'token-approved': 'APPROVED',
        'code-m133': 'REJECTED',
        'code-declined': 'DECLINED',
      }[item.kind];
      expect(`${item.kind} ${row.status} ${row.errorCode ?? ''}`).toBe(
        `${item.kind} ${expected} ${item.kind === 'code-m133' ? 'M133' : item.kind === 'code-declined' ? '6002' : ''}`,
      );
    });

    // Exactly once, transfer by transfer.
    let credited = '0.00';
    let approvedTotal = '0.00';
    for (const row of rows) {
      const transfer = row.transferId ? ledgerById.get(row.transferId) : undefined;
      if (row.status === 'APPROVED' || row.status === 'DECLINED') {
        expect(transfer, `funding ${row.id} has no ledger transfer`).toBeDefined();
        expect(transfer?.executions, `funding ${row.id}`).toBe(1);
        expect(transfer?.status).toBe(row.status);
      } else {
        expect(transfer?.executions ?? 0, `funding ${row.id} ${row.status}`).toBe(0);
      }
      for (const abandoned of row.abandonedTransferIds) expect(ledgerById.get(abandoned)?.executions ?? 0).toBe(0);
      if (row.status === 'APPROVED') approvedTotal = addAmounts(approvedTotal, row.amount.toFixed(2), 'PHP');
    }
    const ours = new Set(rows.map((row) => row.transferId).filter((id): id is string => id !== null));
    for (const transfer of ledger.transfers) {
      expect(transfer.executions, `transfer ${transfer.transferId}`).toBeLessThanOrEqual(1);
      if (transfer.executions > 0)
        expect(ours.has(transfer.transferId), `executed transfer ${transfer.transferId} has no funding`).toBe(true);
      if (transfer.status === 'APPROVED') credited = addAmounts(credited, transfer.amount.value, 'PHP');
    }
    expect(credited).toBe(approvedTotal);

    // The faults really happened: some executes were reconciled, some creates left intents behind.
    expect(rows.filter((row) => row.status === 'APPROVED').length).toBe(80);
    const reconciled = await stack.database.fundingEvent.count({
      where: { fundingId: { in: fundingIds }, status: 'RECONCILING' },
    });
    expect(reconciled).toBeGreaterThan(0);
  }, 400_000);
});
