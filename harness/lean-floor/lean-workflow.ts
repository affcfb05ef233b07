// The lean floor: the least a Temporal workflow can do for a funding, with default SDK options
// (two ordinary activities: create, then execute). No status tracking, review, ledger, search
// attributes, patches or local activities: what walletflow's fundWallet is measured against.
import { proxyActivities } from '@temporalio/workflow';
import type { LeanActivities } from './lean-activities.ts';
import type { LeanFundingInput } from './lean-contract.ts';

const { leanCreate, leanExecute } = proxyActivities<LeanActivities>({ startToCloseTimeout: '20 seconds' });

export async function leanFunding(input: LeanFundingInput): Promise<string> {
  const transferId = await leanCreate(input);
  return leanExecute(input.id, transferId);
}
