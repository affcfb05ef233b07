// Build B of the deploy tests (test/deploy/worker-deployment-cases.ts): every workflow as today's,
// except fundWallet, which starts with a one-millisecond timer before today's code. Its commands
// differ from build A's from the first one, with no patch: a run of A replayed on B would fail
// nondeterministically, so the test proves that none ever is (a pinned run stays on its build).
import { setWorkflowOptions, sleep } from '@temporalio/workflow';
import type { FundingResult } from '../../domain/funding.ts';
import type { FundWalletInput } from '../../workflows/fund-wallet.contract.ts';
import { fundWallet as fundWalletOfBuildA } from '../../workflows/fund-wallet.ts';

export * from '../../workflows/index.ts';

setWorkflowOptions({ versioningBehavior: 'PINNED' }, fundWallet);

export async function fundWallet(input: FundWalletInput): Promise<FundingResult> {
  await sleep(1);
  return fundWalletOfBuildA(input);
}
