// The settlement files' own attempts at a page (settlement-unreadable.test.ts, settlement-wallet-away.test.ts): a run
// of a day of fundings whose settleItems this process runs, attempt by attempt as Temporal would, against a wallet
// whose retrieves a test fails as it likes.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSettlementRuns } from '../../ledger/settlement-runs.ts';
import { WalletError, type WalletClient } from '../../wallet/index.ts';
import type { PartnerStack } from './partner-stack.ts';
import { settlementRunKit, timeZone } from './settlement-run-kit.ts';
import { stackActivities } from './stack-activities.ts';

/** A retrieve's failure as the wallet client throws it. */
export const retrieveError = (httpStatus: number, code: string, outcome: 'retryable' | 'unknown' | 'rejected') =>
  new WalletError({ operation: 'transfers.retrieve', httpStatus, code, outcome, requestReferenceNo: randomUUID() });

/** pageSettledHere on the stack `stack()` answers (started by the file). */
export function settledPageKit(stack: () => PartnerStack) {
  const { freshDay, plant } = settlementRunKit(stack);
  /**
   * A run of a day of 20 fundings, and its settleItems as this process runs it (the test makes each attempt, as
   * Temporal would), one page of 20: `failure` answers a retrieve with an error, or null for the wallet's own answer;
   * `database`, the activities' own (the stack's by default).
   */
  async function pageSettledHere(
    failure: (transferId: string) => WalletError | null | Promise<WalletError | null>,
    database: PartnerStack['database'] = stack().database,
    fundings = 20,
  ) {
    const day = await freshDay();
    await plant(day, fundings);
    const { run } = await createSettlementRuns(stack().database).start({
      date: day,
      timeZone,
      wholeDay: true,
      requestedBy: 'settlement-run-faults',
    });
    const wallet: WalletClient = {
      ...stack().wallet,
      retrieveTransfer: async (transferId) => {
        const error = await failure(transferId);
        if (error) throw error;
        return stack().wallet.retrieveTransfer(transferId);
      },
    };
    // A retrieve's tries 10 and 20 ms apart (production's: 500 and 750 ms): what these tests prove is which attempts
    // count, not how long a try waits.
    const { settleItems } = stackActivities(stack(), { wallet, database, settlementRetryPauseMs: 10 });
    const input = {
      runId: run.id,
      side: 'fundings' as const,
      after: null,
      pageSize: 20,
      maxItems: 100,
      maxInFlight: 4,
      inFlight: 4,
    };
    /**
     * An attempt as Temporal would make it: its number, and the last heartbeat of the attempt before it; `cancelWhen`
     * resolved, Temporal cancels it.
     */
    let details: unknown;
    const attempt = (number: number, cancelWhen?: Promise<void>) => {
      const environment = new MockActivityEnvironment({ attempt: number, heartbeatDetails: details });
      environment.on('heartbeat', (beat: unknown) => {
        details = beat;
      });
      void cancelWhen?.then(() => environment.cancel('CANCELLED'));
      return environment.run(settleItems, input);
    };
    return { run, settleItems, input, attempt };
  }

  return { pageSettledHere };
}
