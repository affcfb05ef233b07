// The CLI files' stack (test/integration/cli.test.ts, cli-ops-routes.test.ts): a partner stack with its
// in-process worker for the file (or the describe it is called in), the real `walletflow` CLI pointed
// at it with the stack's key in WALLETFLOW_OPS_KEY (never a flag), and cash-in codes of new sandbox users.
import { afterAll, beforeAll } from 'vitest';
import { runCli as runCliWith, type CliResult } from './cli-run.ts';
import { startPartnerStack, type PartnerStack } from './partner-stack.ts';

export function useCliStack() {
  let current: PartnerStack | undefined;
  beforeAll(async () => {
    current = await startPartnerStack();
    await current.startWorker();
  });
  afterAll(async () => {
    await current?.close();
  });
  const stack = (): PartnerStack => {
    if (!current) throw new Error('the CLI stack is not started (useCliStack: beforeAll)');
    return current;
  };
  return {
    stack,
    /** `--api` and the stack's API. */
    target: () => ['--api', stack().apiBase],
    /** The CLI with the stack's key in WALLETFLOW_OPS_KEY (or `env`'s settings instead). */
    runCli: (args: string[], env: NodeJS.ProcessEnv = { WALLETFLOW_OPS_KEY: stack().opsKey }): Promise<CliResult> =>
      runCliWith(args, { env }),
    /** A new sandbox user of that KYC level, with 100.00 PHP, and a cash-in code for it. */
    async codeFor(kycLevel: 'KYC0' | 'KYC1') {
      const user = await stack().admin.createUser({ kycLevel, balance: '100.00' });
      const { code } = await stack().admin.cashInCode(user.userId);
      return { user, code };
    },
  };
}
