// The batch items record's set-based moves on a real PostgreSQL: each one moves an item only from
// the statuses the transition table allows (domain/funding.ts fundingTransitions, sourcesOf),
// narrowed where the write makes only some of those moves, never widened. A batch holds one item
// in every status, each write is asked to move them all, and the items it moved are exactly the
// table's sources: a PENDING item is claimed and cancelled, a CREATING one is begun, an executed
// one is finished, and an item in review is never finished by a chunk (its way out is its
// resolution).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  fundingReviewStatus,
  fundingTransitions,
  isFinalFundingStatus,
  type FundingStatus,
} from '../../domain/funding.ts';
import { sourcesOf, statusesOf } from '../../domain/transitions.ts';
import { createBatchRecord } from '../../fundings/batch-record.ts';
import {
  batchItemMoves,
  batchItemRows,
  createBatchItemsRecord,
  type NewBatchItem,
} from '../../fundings/batch-items-record.ts';
import {
  claimedFundingMoves,
  createClaimedFundingsRecord,
  type WalletFinalStatus,
} from '../../fundings/claimed-fundings-record.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { createLedger } from '../../ledger/ledger.ts';
import { createDatabase } from '../../lib/database.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl(), { maxConnections: 5 });
afterAll(() => database.$disconnect());

const records = { database, cipher: createTokenCipher(randomBytes(32)), ledger: createLedger() };
const fundings = createFundingRecord(records);
const batchItems = createBatchItemsRecord(records);
const claimedFundings = createClaimedFundingsRecord(records);
const batches = createBatchRecord({ database, fundings, batchItems });

// Each batch ends cancelled: no sweep that runs later on this worker's database starts a runner
// for it, and every hold of its items is settled as their states say (files that run after this
// one check the ledger's invariants over the whole database).
const made: string[] = [];
afterEach(async () => {
  for (const batchId of made.splice(0))
    await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'test' });
});

const everyStatus = statusesOf(fundingTransitions);
/** The fence every item is claimed under here, as a chunk's claim would have left it. */
const FENCE = 1;

/**
 * A RUNNING batch from the TREASURY with one item in each status (the table's order), each under
 * the claim FENCE, with no transfer stored and no cancel asked: only its status tells the items
 * apart. Answers each item's id by its status.
 */
async function batchWithAnItemInEachStatus(): Promise<Map<FundingStatus, string>> {
  const batchId = randomUUID();
  const items: NewBatchItem[] = everyStatus.map((status, index) => {
    const idempotencyKey = `batch:${batchId}:${status}`;
    return {
      id: randomUUID(),
      idempotencyKey,
      workflowId: `funding-${idempotencyKey}`,
      reference: status,
      recipient: { type: 'CODE', code: String(1_000_000 + index) },
      amount: 1000n,
    };
  });
  const stored = await batches.insert({
    id: batchId,
    idempotencyKey: `items-record-${batchId}`,
    requestFingerprint: '0'.repeat(64),
    workflowId: `funding-batch-${batchId}`,
    name: 'one item per status',
    currency: 'PHP',
    items: batchItemRows(items),
    createdBy: 'ops',
    approvalThreshold: null,
  });
  expect(stored).toEqual({ stored: true, needsApproval: false });
  made.push(batchId);
  const byStatus = new Map<FundingStatus, string>();
  for (const [index, status] of everyStatus.entries()) {
    const id = items[index]!.id;
    // A test's own write: the item as some earlier move would have left it.
    await database.funding.update({ where: { id }, data: { status, ownerFence: FENCE } });
    // A final item's hold settled as its state says, as its move would have.
    if (isFinalFundingStatus(status)) expect(await fundings.settleFinalHold(id)).not.toBe('none');
    byStatus.set(status, id);
  }
  return byStatus;
}

/** The statuses (as the items stood before the write) of the items a write moved. */
function statusesMoved(byStatus: Map<FundingStatus, string>, movedIds: Iterable<string>): FundingStatus[] {
  const moved = new Set(movedIds);
  return everyStatus.filter((status) => moved.has(byStatus.get(status)!));
}

/** Each item's status now, in the table's order of the statuses they started in. */
async function statusesNow(byStatus: Map<FundingStatus, string>): Promise<Map<FundingStatus, FundingStatus>> {
  const rows = await database.funding.findMany({
    where: { id: { in: [...byStatus.values()] } },
    select: { id: true, status: true },
  });
  const now = new Map(rows.map((row) => [row.id, row.status]));
  return new Map(everyStatus.map((status) => [status, now.get(byStatus.get(status)!)!]));
}

describe('the batch items and claimed fundings records move items only as the transition table allows', () => {
  it('claims PENDING items only: the sources of CREATING', async () => {
    const byStatus = await batchWithAnItemInEachStatus();
    const claimed = await claimedFundings.claimPendingItems([...byStatus.values()]);
    expect(
      statusesMoved(
        byStatus,
        claimed.map((row) => row.id),
      ),
    ).toEqual(sourcesOf(fundingTransitions, 'CREATING'));
    expect(claimedFundingMoves.claim.from).toEqual(['PENDING']);
    // Under a claim of its own, with its event.
    expect(claimed[0]).toMatchObject({ status: 'CREATING', fence: FENCE + 1 });
    expect(
      await database.fundingEvent.count({
        where: { fundingId: byStatus.get('PENDING')!, status: 'CREATING', fence: FENCE + 1 },
      }),
    ).toBe(1);
  });

  it('claims no item of a batch whose cancel is under way (not yet committed): none starts after the cancel was asked', async () => {
    const byStatus = await batchWithAnItemInEachStatus();
    const pending = byStatus.get('PENDING')!;
    const { batchId } = await database.funding.findUniqueOrThrow({ where: { id: pending }, select: { batchId: true } });
    // The cancel's first statement (batch-record.ts move), its transaction held open as ending 100,000 items holds it.
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let moved = () => {};
    const movedNow = new Promise<void>((resolve) => (moved = resolve));
    const cancel = database
      .$transaction(
        async (tx) => {
          await tx.$executeRaw`UPDATE funding_batch SET state = 'CANCELLED'::"FundingBatchState" WHERE id = ${batchId}::uuid`;
          moved();
          await released;
          throw new Error('rolled back: the test only holds the move');
        },
        { timeout: 60_000 },
      )
      .catch((error: unknown) => error);
    await movedNow;
    try {
      // Before: the batch read as RUNNING until the cancel committed, and the chunk's claim started the item.
      expect(await claimedFundings.claimPendingItems([pending])).toEqual([]);
      expect(await fundings.claimPending(pending)).toBeNull();
    } finally {
      release();
      await cancel;
    }
    expect((await database.funding.findUniqueOrThrow({ where: { id: pending } })).status).toBe('PENDING');
    // The move over (here rolled back, the batch RUNNING again), the item is claimed as before.
    expect(await claimedFundings.claimPendingItems([pending])).toHaveLength(1);
  });

  it('never moves to CREATING, on its own workflow’s step path, an item its cancelled batch left PENDING (a stray)', async () => {
    const byStatus = await batchWithAnItemInEachStatus();
    const pending = byStatus.get('PENDING')!;
    const { batchId } = await database.funding.findUniqueOrThrow({ where: { id: pending }, select: { batchId: true } });
    expect(await batches.move(batchId!, 'CANCELLED', { field: 'cancelledBy', name: 'test' })).toBe(true);
    // A stray: PENDING though its batch ended (as the sweep's cases build one).
    const ended = await database.funding.findUniqueOrThrow({ where: { id: pending } });
    expect([ended.status, ended.errorCode]).toEqual(['FAILED', 'CANCELLED']);
    await database.funding.update({ where: { id: pending }, data: { status: 'PENDING', errorCode: null } });
    try {
      // Before: moved, and its workflow then created and executed the transfer of an item of a cancelled batch.
      expect(await fundings.move(pending, 'CREATING', { detail: 'creating the transfer intent' })).toBe(false);
      expect((await database.funding.findUniqueOrThrow({ where: { id: pending } })).status).toBe('PENDING');
    } finally {
      // As the cancel left it (its hold released then), for the ledger's checks of the files after this one.
      await database.funding.update({ where: { id: pending }, data: { status: 'FAILED', errorCode: 'CANCELLED' } });
    }
  });

  it('begins the execute of CREATING items only: the sources of EXECUTING, each with its transfer stored', async () => {
    const byStatus = await batchWithAnItemInEachStatus();
    const moved = await claimedFundings.beginExecuteMany(
      everyStatus.map((status) => ({
        fundingId: byStatus.get(status)!,
        fence: FENCE,
        transferId: `transfer-${byStatus.get(status)!}`,
        requestReferenceNo: `reference-${status}`,
      })),
    );
    expect(statusesMoved(byStatus, moved)).toEqual(sourcesOf(fundingTransitions, 'EXECUTING'));
    expect(claimedFundingMoves.beginExecute.from).toEqual(['CREATING']);
    const begun = await database.funding.findUniqueOrThrow({ where: { id: byStatus.get('CREATING')! } });
    expect(begun).toMatchObject({ status: 'EXECUTING', transferId: `transfer-${begun.id}` });
    // The others keep no transfer: nothing of theirs can be executed.
    expect(
      await database.funding.count({ where: { id: { in: [...byStatus.values()] }, transferId: { not: null } } }),
    ).toBe(1);
  });

  it.each<WalletFinalStatus>(['APPROVED', 'DECLINED'])(
    'finishes %s only what was executed: the sources of that state but review, whose way out is its resolution',
    async (to) => {
      const byStatus = await batchWithAnItemInEachStatus();
      const moved = await claimedFundings.finishExecutedMany(
        everyStatus.map((status) => ({
          fundingId: byStatus.get(status)!,
          fence: FENCE,
          status: to,
          code: to === 'DECLINED' ? '6001' : null,
          requestReferenceNo: `reference-${status}`,
        })),
      );
      const expected = sourcesOf(fundingTransitions, to).filter((status) => status !== fundingReviewStatus);
      expect(statusesMoved(byStatus, moved)).toEqual(expected);
      expect(expected).toEqual(['EXECUTING', 'RECONCILING']);
      expect(claimedFundingMoves.finish[to].from).toEqual(expected);
      // The table alone would let a final word end a funding in review; the chunk never does.
      expect(sourcesOf(fundingTransitions, to)).toContain(fundingReviewStatus);
      const now = await statusesNow(byStatus);
      expect(now.get('NEEDS_REVIEW')).toBe('NEEDS_REVIEW');
      expect(now.get('EXECUTING')).toBe(to);
      expect(now.get('RECONCILING')).toBe(to);
      // Of the items not final before, only the ones it moved had their holds settled (the one in review keeps its
      // own).
      const settled = await database.$queryRaw<Array<{ id: string }>>`
      SELECT h.funding_id::text AS id FROM ledger_transaction h JOIN ledger_transaction s ON s.settles_id = h.id
      WHERE h.kind = 'HOLD' AND h.funding_id = ANY(${[...byStatus.values()]}::uuid[])`;
      expect(
        statusesMoved(
          byStatus,
          settled.map((row) => row.id),
        ).filter((status) => !isFinalFundingStatus(status)),
      ).toEqual(expected);
    },
  );

  it('ends the items not started when the batch ends: of the sources of FAILED, PENDING only (a CREATING item is left to finish)', async () => {
    const byStatus = await batchWithAnItemInEachStatus();
    const batchId = (await database.funding.findUniqueOrThrow({ where: { id: byStatus.get('PENDING')! } })).batchId!;
    const before = await statusesNow(byStatus);
    const ended = await database.$transaction(async (tx) => {
      const ended = await batchItems.cancelPendingBatchItems(tx, batchId, 'ops');
      expect(await batchItems.releaseCancelledBatchItems(tx, batchId)).toBe(1);
      return ended;
    });
    expect(ended.count).toBe(1);
    const expected = sourcesOf<FundingStatus>(fundingTransitions, 'FAILED').filter((status) => status === 'PENDING');
    expect(batchItemMoves.cancel.from).toEqual(expected);
    const now = await statusesNow(byStatus);
    const changed = everyStatus.filter((status) => now.get(status) !== before.get(status));
    expect(changed).toEqual(expected);
    expect(await database.funding.findUniqueOrThrow({ where: { id: byStatus.get('PENDING')! } })).toMatchObject({
      status: 'FAILED',
      errorCode: 'CANCELLED',
      cancelRequested: true,
    });
    // A CREATING item could be cancelled on its own (ops' cancel), but a batch's end leaves it to its pass.
    expect(now.get('CREATING')).toBe('CREATING');
  });
});
