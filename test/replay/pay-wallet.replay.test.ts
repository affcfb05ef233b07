// Replays every stored payWallet history (current and archived) against today's workflow bundle:
// success, insufficient balance, and both review paths, which end by the `resolve` update.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { payWalletWorkflowType } from '../../workflows/pay-wallet.contract.ts';
import { historyPaths, installQuietReplayRuntime, replayStored, storedHistoriesOf } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(payWalletWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('payWallet replay', () => {
  it('has a stored history for every payment path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[payWalletWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    expect(result?.error).toBeUndefined();
  });

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-pay-wallet-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });
});
