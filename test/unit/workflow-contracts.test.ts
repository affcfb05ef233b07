// The contracts against what cannot change under running workflows and stored rows: Temporal knows
// a workflow by the name its function is exported under, and funding and payment rows store ids
// built from their Idempotency-Key.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { sha256Hex } from '../../lib/idempotency.ts';
import * as workflows from '../../workflows/index.ts';
import { rollbackTarget, workflowTypes } from '../../cli/deploy.ts';
import { fundWallet } from '../../workflows/fund-wallet.ts';
import { onboardEmbeddedSession } from '../../workflows/onboard-embedded-session.ts';
import { payWallet } from '../../workflows/pay-wallet.ts';
import { reconcileFundings } from '../../workflows/sweep.ts';
import { deliverWebhooks } from '../../workflows/deliver-webhooks.ts';
import {
  deliverWebhooksWorkflowType,
  type DeliverWebhooksWorkflow,
} from '../../workflows/deliver-webhooks.contract.ts';
import { purgeExpired } from '../../workflows/purge-expired.ts';
import { fundBatch } from '../../workflows/fund-batch.ts';
import { fundLane } from '../../workflows/fund-lane.ts';
import { fundLaneWorkflowType, type FundLaneWorkflow } from '../../workflows/fund-lane.contract.ts';
import {
  fundingWorkflowId,
  fundWalletWorkflowType,
  type FundWalletWorkflow,
} from '../../workflows/fund-wallet.contract.ts';
import {
  onboardEmbeddedSessionWorkflowType,
  onboardingWorkflowId,
  type OnboardEmbeddedSessionWorkflow,
} from '../../workflows/onboard-embedded-session.contract.ts';
import {
  paymentWorkflowId,
  payWalletWorkflowType,
  type PayWalletWorkflow,
} from '../../workflows/pay-wallet.contract.ts';
import { reconcileFundingsWorkflowType, type SweepWorkflow } from '../../workflows/sweep.contract.ts';
import { purgeExpiredWorkflowType, type PurgeExpiredWorkflow } from '../../workflows/purge-expired.contract.ts';
import { fundBatchWorkflowType, type FundBatchWorkflow } from '../../workflows/fund-batch.contract.ts';
import { settleDay } from '../../workflows/settle-day.ts';
import {
  settleDayWorkflowType,
  settlementWorkflowId,
  type SettleDayWorkflow,
} from '../../workflows/settle-day.contract.ts';

describe('workflow contracts', () => {
  it('walletflow deploy rollback returns to the build current before, never to a canary that was only ramped', () => {
    const version = (buildId: string, deactivatedAt: number | null, lastCurrentAt: number | null, createdAt = 0) => ({
      buildId,
      drainage: null,
      createdAt,
      deactivatedAt,
      lastCurrentAt,
    });
    // A was current until B (t 10); B until A again (t 20); canary C ramped, then turned down (t 30).
    const versions = [version('A', null, 20), version('B', 20, 15), version('C', 30, null)];
    expect(rollbackTarget(versions, 'A')?.buildId).toBe('B');
    expect(rollbackTarget([version('A', null, 1), version('C', 30, null)], 'A')).toBeUndefined();
    // A server that reports no last time as current (1.29, the dev server): the older build that stopped last. A was
    // current until B (registered after it) was promoted (t 20); canary C, newer still, ramped and turned down (t 30):
    // a rollback right after ending its ramp went to C.
    const unreported = [version('A', 20, null, 1), version('B', null, null, 2), version('C', 30, null, 3)];
    expect(rollbackTarget(unreported, 'B')?.buildId).toBe('A');
    // A ramped again after B's promotion and turned down (t 40) is still the build before B.
    expect(rollbackTarget([...unreported.slice(1), version('A', 40, null, 1)], 'B')?.buildId).toBe('A');
    // Nothing older than the current build: nothing to roll back to (`deploy promote` names a build).
    expect(rollbackTarget(unreported, 'A')).toBeUndefined();
    // No current build (sent to unversioned workers by hand after a bad B): the build that stopped last is B, just
    // abandoned, and a rollback went to it ("rolled back to B (from none)"). None, on either kind of server.
    expect(rollbackTarget([version('A', 10, null, 1), version('B', 20, null, 2)], null)).toBeUndefined();
    expect(rollbackTarget([version('A', 10, 5, 1), version('B', 20, 15, 2)], null)).toBeUndefined();
  });

  it('walletflow deploy status counts the unversioned runs of every workflow the worker registers', () => {
    // fundLane was missing: lanes started before a versioned build was current ran on no build, uncounted.
    expect([...workflowTypes].sort()).toEqual(Object.keys(workflows).sort());
  });

  it('name exactly the workflows the worker registers', () => {
    expect(Object.keys(workflows).sort()).toEqual(
      [
        fundWalletWorkflowType,
        payWalletWorkflowType,
        reconcileFundingsWorkflowType,
        onboardEmbeddedSessionWorkflowType,
        deliverWebhooksWorkflowType,
        purgeExpiredWorkflowType,
        fundBatchWorkflowType,
        fundLaneWorkflowType,
        settleDayWorkflowType,
      ].sort(),
    );
  });

  it('build the workflow ids stored rows already hold', () => {
    // `<prefix>-` and the first 40 hex digits of SHA-256('order-42') (3bf8b157…).
    expect(fundingWorkflowId('order-42', sha256Hex)).toBe('funding-3bf8b157c4238eefe5ae4a66eca81c6b887d4dce');
    expect(paymentWorkflowId('order-42', sha256Hex)).toBe('payment-3bf8b157c4238eefe5ae4a66eca81c6b887d4dce');
    expect(onboardingWorkflowId('5f1c0d9e-0000-4000-8000-000000000001')).toBe(
      'embedded-session-5f1c0d9e-0000-4000-8000-000000000001',
    );
    expect(settlementWorkflowId('2026-03-01', '5f1c0d9e-0000-4000-8000-000000000002')).toBe(
      'settlement-2026-03-01-5f1c0d9e-0000-4000-8000-000000000002',
    );
  });

  it("declare each workflow's signature exactly (starters type-check against the contract, not the workflow file)", () => {
    expectTypeOf(fundWallet).toEqualTypeOf<FundWalletWorkflow>();
    expectTypeOf(payWallet).toEqualTypeOf<PayWalletWorkflow>();
    expectTypeOf(onboardEmbeddedSession).toEqualTypeOf<OnboardEmbeddedSessionWorkflow>();
    expectTypeOf(reconcileFundings).toEqualTypeOf<SweepWorkflow>();
    expectTypeOf(deliverWebhooks).toEqualTypeOf<DeliverWebhooksWorkflow>();
    expectTypeOf(purgeExpired).toEqualTypeOf<PurgeExpiredWorkflow>();
    expectTypeOf(fundBatch).toEqualTypeOf<FundBatchWorkflow>();
    expectTypeOf(fundLane).toEqualTypeOf<FundLaneWorkflow>();
    expectTypeOf(settleDay).toEqualTypeOf<SettleDayWorkflow>();
  });
});
