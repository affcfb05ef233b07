// The chaos soak: the CI-sized `walletflow soak` run as a child process (its own stack, faults,
// worker/API/Temporal restarts, three funding batches) must exit 0 with its table; and the invariant checker, fed a
// crafted ledger, must name a double execution, a missing funding, a money mismatch and a stuck item.
import { describe, expect, it } from 'vitest';
import { runLongCli } from '../support/cli-run.ts';
import {
  checkSoak,
  formatSoakTable,
  type SoakCheckInput,
  type SoakFundingRow,
  type SoakPaymentRow,
} from '../../harness/soak-invariants.ts';
import { itemsSent, type SoakBatch } from '../../harness/soak-batches.ts';

// Too slow: SIGTERM lets the soak stop everything it started; SIGKILL only as a last resort.
const runSoak = (args: string[], timeoutMs: number) => runLongCli(['soak', ...args], { timeoutMs, graceMs: 30_000 });

describe('walletflow soak', () => {
  it('CI size: every funding and payment final, the ledger in agreement, exit 0', async () => {
    const { code, output } = await runSoak(
      ['--fundings', '40', '--payments', '15', '--batches', '3', '--batch-items', '10-12', '--seed', '7'],
      420_000,
    );
    expect(output, output).toContain('invariants: all hold (0 violations)');
    expect(code, output).toBe(0);
    // The fundings asked: 40 single ones and the three batches' items, every one recorded.
    const requests = /\| requests \(recorded \/ asked\) \| (\d+) \/ (\d+) \| 15 \/ 15 \| ✓ \|/.exec(output);
    expect(requests, output).not.toBeNull();
    expect(requests![1]).toBe(requests![2]);
    expect(Number(requests![2])).toBeGreaterThanOrEqual(40 + 3 * 10);
    // One batch ran through, one was paused and resumed, one cancelled midway; each approved by the second key.
    expect(output).toMatch(
      /batches: #0 \d+ items run → COMPLETED \(approved by the second key\); #1 \d+ items pause-resume → COMPLETED \(approved by the second key, pause at \d+ done: 200, resume: 200\); #2 \d+ items cancel → CANCELLED \(approved by the second key, cancel at \d+ done: 200\)/,
    );
    expect(output).toMatch(/\| executions per item: 0 \/ 1 \/ more \| \d+ \/ \d+ \/ 0 \| \d+ \/ \d+ \/ 0 \| ✓ \|/);
    expect(output).toMatch(/\| stuck \(not final at the end\) \| 0 \| 0 \| ✓ \|/);
    expect(output).toMatch(/\| executed without a funding \/ payment \| 0 \| 0 \| ✓ \|/);
    expect(output).toMatch(
      /\| money, walletflow = ledger \(PHP\) \| credited ([\d.]+) = \1 \| debited ([\d.]+) = \2 \| ✓ \|/,
    );
    // The chaos really happened.
    const chaos =
      /worker SIGKILL ×(\d+), worker SIGSTOP ×(\d+) \(with 2 workers\), API restart ×(\d+), Temporal dev server restart ×(\d+)/.exec(
        output,
      );
    expect(chaos, output).not.toBeNull();
    expect(
      chaos!
        .slice(1)
        .map(Number)
        .every((count) => count >= 1),
    ).toBe(true);
  }, 480_000);
});

describe('the invariant checker', () => {
  const funding = (over: Partial<SoakFundingRow>): SoakFundingRow => ({
    id: 'f-ok',
    status: 'APPROVED',
    errorCode: null,
    transferId: 't-ok',
    abandonedTransferIds: [],
    amount: '10.000',
    createdAt: 0,
    finalAt: 1000,
    expected: { status: 'APPROVED', code: null },
    ...over,
  });
  const payment = (over: Partial<SoakPaymentRow>): SoakPaymentRow => ({
    id: 'p-ok',
    status: 'SUCCEEDED',
    errorCode: null,
    walletPaymentId: 'wp-ok',
    amount: '5.000',
    fee: '0.500',
    createdAt: 0,
    finalAt: 2000,
    reviewAt: null,
    resolvedOutcome: null,
    expected: { status: 'SUCCEEDED', code: null },
    ...over,
  });
  const transfer = (transferId: string, status: string, executions: number, value: string) => ({
    transferId,
    status,
    executions,
    amount: { value },
  });
  const ledgerPayment = (paymentId: string, status: string, executions: number, value: string) => ({
    paymentId,
    status,
    executions,
    amount: { value },
    fee: { value: '0.50' },
  });

  const healthy: SoakCheckInput = {
    requested: { fundings: 3, payments: 2 },
    fundings: [
      funding({}),
      funding({
        id: 'f-declined',
        status: 'DECLINED',
        errorCode: '6002',
        transferId: 't-declined',
        expected: { status: 'DECLINED', code: '6002' },
      }),
      funding({
        id: 'f-rejected',
        status: 'REJECTED',
        errorCode: 'M133',
        transferId: null,
        abandonedTransferIds: ['t-orphan'],
        expected: { status: 'REJECTED', code: 'M133' },
      }),
    ],
    payments: [
      payment({}),
      payment({
        id: 'p-review',
        status: 'FAILED',
        errorCode: 'RESOLVED_FAILED',
        walletPaymentId: 'wp-review',
        reviewAt: 1500,
        finalAt: 9000,
        resolvedOutcome: 'FAILED',
        expected: { status: 'FAILED', code: 'INSUFFICIENT_BALANCE' },
      }),
    ],
    ledger: {
      transfers: [
        transfer('t-ok', 'APPROVED', 1, '10.00'),
        transfer('t-declined', 'DECLINED', 1, '10.00'),
        transfer('t-orphan', 'CREATED', 0, '10.00'),
        transfer('t-lost-answer', 'CREATED', 0, '3.00'),
      ],
      payments: [ledgerPayment('wp-ok', 'EXECUTED', 1, '5.00'), ledgerPayment('wp-review', 'CREATED', 0, '5.00')],
    },
    balances: [
      { userId: 'u1', before: '0.00', after: '10.00' },
      { userId: 'u2', before: '100.00', after: '94.50' },
    ],
  };

  it('passes a consistent run, with its table', () => {
    const { violations, table } = checkSoak(healthy);
    expect(violations).toEqual([]);
    expect(table.fundings).toMatchObject({
      recorded: 3,
      stuck: 0,
      matching: 3,
      executions: { zero: 1, one: 2, more: 0 },
      money: { walletflow: '10.00', ledger: '10.00' },
    });
    expect(table.payments).toMatchObject({
      matching: 2,
      money: { walletflow: '5.50', ledger: '5.50' },
      reviews: { SUCCEEDED: 0, FAILED: 1 },
    });
    // Time to final stops at the review for a reviewed payment.
    expect(table.payments.p99Ms).toBe(2000);
    const text = formatSoakTable(table, violations);
    expect(text).toContain('| money, walletflow = ledger (PHP) | credited 10.00 = 10.00 | debited 5.50 = 5.50 | ✓ |');
    expect(text).not.toContain('✗');
  });

  it('names a double execution, a missing funding, a money mismatch and a stuck item', () => {
    const crafted: SoakCheckInput = {
      ...healthy,
      // A fourth funding was asked for and never recorded.
      requested: { fundings: 4, payments: 2 },
      fundings: [
        // Executed twice at the wallet.
        funding({}),
        // walletflow says 12.00 was approved; the ledger moved 10.00.
        funding({
          id: 'f-declined',
          status: 'APPROVED',
          errorCode: null,
          transferId: 't-more',
          amount: '12.000',
          expected: { status: 'APPROVED', code: null },
        }),
        // Still reconciling at the end.
        funding({ id: 'f-stuck', status: 'RECONCILING', transferId: 't-stuck', finalAt: null }),
      ],
      ledger: {
        transfers: [
          transfer('t-ok', 'APPROVED', 2, '10.00'),
          transfer('t-more', 'APPROVED', 1, '10.00'),
          transfer('t-stuck', 'APPROVED', 1, '4.00'),
          // Executed, and no funding names it.
          transfer('t-nobody', 'APPROVED', 1, '1.00'),
        ],
        payments: healthy.ledger.payments,
      },
      balances: undefined,
    };
    const { violations, table } = checkSoak(crafted);
    const of = (invariant: string) => violations.filter((violation) => violation.invariant === invariant);
    expect(of('double-execution')).toEqual([expect.objectContaining({ ids: ['t-ok'] })]);
    expect(of('execution-mismatch').map((violation) => violation.ids)).toContainEqual(['f-ok', 't-ok']);
    expect(of('lost-request')).toEqual([expect.objectContaining({ detail: expect.stringMatching(/1 of 4 fundings/) })]);
    expect(of('executed-without-record')).toEqual([expect.objectContaining({ ids: ['t-nobody'] })]);
    expect(of('amount-mismatch')).toEqual([expect.objectContaining({ ids: ['f-declined', 't-more'] })]);
    expect(of('money-credited')).toEqual([
      expect.objectContaining({ detail: 'walletflow credited 22.00, the ledger 25.00 PHP' }),
    ]);
    expect(of('stuck')).toEqual([expect.objectContaining({ ids: ['f-stuck'] })]);
    expect(table.fundings).toMatchObject({
      stuck: 1,
      executedWithoutRecord: 1,
      executions: { zero: 0, one: 2, more: 1 },
    });
    const text = formatSoakTable(table, violations);
    expect(text).toContain('| stuck (not final at the end) | 1 | 0 | ✗ |');
    expect(text).toContain('| executions per item: 0 / 1 / more | 0 / 2 / 1 | 1 / 1 / 0 | ✗ |');
  });

  it('counts a payment the faults kept from the wallet apart: reviewed FAILED with nothing debited; anything else unplanned is a violation', () => {
    const lost = payment({
      id: 'p-lost',
      status: 'FAILED',
      errorCode: 'RESOLVED_FAILED',
      walletPaymentId: 'wp-lost',
      reviewAt: 1500,
      finalAt: 9000,
      resolvedOutcome: 'FAILED',
    });
    const ledger = {
      ...healthy.ledger,
      payments: [...healthy.ledger.payments, ledgerPayment('wp-lost', 'CREATED', 0, '5.00')],
    };
    const { violations, table, failedUnderFaults } = checkSoak({
      ...healthy,
      requested: { fundings: 3, payments: 3 },
      payments: [...healthy.payments, lost],
      ledger,
    });
    expect(violations).toEqual([]);
    expect(failedUnderFaults).toEqual(['p-lost']);
    expect(table.payments).toMatchObject({ asPlanned: 2, failedUnderFaults: 1 });
    expect(formatSoakTable(table, violations)).toContain(
      '| outcome as planned | 3 / 3 | 2 / 3 (and 1 reviewed FAILED, nothing debited: the faults kept every execute from the wallet) | ✓ |',
    );

    // Failed with no review (walletflow decided on its own), or a wallet that shows an execution: violations.
    const unreviewed = checkSoak({
      ...healthy,
      requested: { fundings: 3, payments: 3 },
      payments: [...healthy.payments, { ...lost, errorCode: 'EXECUTE_FAILED', reviewAt: null, resolvedOutcome: null }],
      ledger,
    });
    expect(unreviewed.violations).toEqual([
      expect.objectContaining({ invariant: 'unexpected-outcome', ids: ['p-lost'] }),
    ]);
    expect(unreviewed.failedUnderFaults).toEqual([]);
    const executed = checkSoak({
      ...healthy,
      requested: { fundings: 3, payments: 3 },
      payments: [...healthy.payments, lost],
      ledger: {
        ...healthy.ledger,
        payments: [...healthy.ledger.payments, ledgerPayment('wp-lost', 'EXECUTED', 1, '5.00')],
      },
    });
    expect(executed.violations.map((violation) => violation.invariant).sort()).toEqual([
      'balances',
      'execution-mismatch',
      'money-debited',
      'unexpected-outcome',
    ]);
  });

  it('holds payments to the same rules: an executed FAILED, a debit mismatch, balances that moved otherwise', () => {
    const { violations } = checkSoak({
      ...healthy,
      payments: [
        payment({
          status: 'FAILED',
          errorCode: 'INSUFFICIENT_BALANCE',
          expected: { status: 'FAILED', code: 'INSUFFICIENT_BALANCE' },
        }),
        healthy.payments[1]!,
      ],
    });
    expect(violations.map((violation) => violation.invariant).sort()).toEqual(['execution-mismatch', 'money-debited']);
    const moved = checkSoak({ ...healthy, balances: [{ userId: 'u1', before: '0.00', after: '20.00' }] });
    expect(moved.violations).toEqual([expect.objectContaining({ invariant: 'balances' })]);
  });

  it('names a write by an overtaken owner: a fence lower than one written before it', () => {
    const inOrder = checkSoak({
      ...healthy,
      fundings: healthy.fundings.map((row) => ({ ...row, eventFences: [1, 1, 2, 2] })),
    });
    expect(inOrder.violations).toEqual([]);
    const stale = checkSoak({
      ...healthy,
      fundings: [{ ...healthy.fundings[0]!, eventFences: [1, 2, 1] }, ...healthy.fundings.slice(1)],
      payments: [{ ...healthy.payments[0]!, eventFences: [3, 2] }, ...healthy.payments.slice(1)],
    });
    expect(stale.violations.map((violation) => [violation.invariant, violation.ids])).toEqual([
      ['stale-owner', [healthy.fundings[0]!.id]],
      ['stale-owner', [healthy.payments[0]!.id]],
    ]);
  });

  it('counts a batch’s items as asked for only once its upload went out: one that failed before is the batch’s failure', () => {
    const batch = (index: number, size: number, sent: boolean): SoakBatch => ({
      index,
      size,
      action: 'run',
      expected: new Map(),
      tokenLinks: new Map(),
      notes: [],
      ...(sent ? { sent } : { error: 'its links could not be stored' }),
    });
    expect(itemsSent([batch(0, 11, true), batch(1, 12, true), batch(2, 11, false)])).toBe(23);
    expect(itemsSent([batch(0, 11, false)])).toBe(0);
  });
});
