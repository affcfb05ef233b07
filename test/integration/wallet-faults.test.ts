// Each sandbox fault mode on each endpoint, and the outcome the client gives it: the caller may
// retry (retryable), must reconcile (unknown) or stop (rejected). After-effect faults really
// changed the state, so the tests also show the reconcile path (retrieve, the ledger).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isWalletError,
  type WalletCallRecord,
  type WalletClient,
  type WalletOperation,
  type WalletOutcome,
} from '../../wallet/index.ts';
import {
  clientFor,
  expectNoneOf,
  loginThroughPages,
  sandboxAdmin,
  startTestSandbox,
  walletFailure,
} from '../support/wallet-sandbox.ts';
import type { RunningSandbox, SandboxAdmin } from '../support/wallet-sandbox.ts';

const php = (value: string) => ({ currency: 'PHP' as const, value });
/** Short enough for hang-after-effect to end quickly, long enough for everything else. */
const timeoutMs = 500;

let sandbox: RunningSandbox;
let admin: SandboxAdmin;

beforeAll(async () => {
  sandbox = await startTestSandbox();
  admin = sandboxAdmin(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});

interface Fixture {
  wallet: WalletClient;
  records: WalletCallRecord[];
  secrets: string[];
  userId: string;
  mobile: string;
  standalone: { accessToken: string; refreshToken: string };
  embedded: { accessToken: string; refreshToken: string };
  transferId: string;
  walletPaymentId: string;
}

/**
 * A fresh sandbox state with one of everything, and a client whose client token is cached. Arranged again when a call
 * of the arrangement itself (no fault set yet) outlasts the client's short time-out on a loaded machine (a full run
 * of six files at once timed out a create here): the faulted calls keep their time-out.
 */
async function arrange(): Promise<Fixture> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await arrangeOnce();
    } catch (error) {
      if (attempt >= 3 || !(isWalletError(error) && error.code === 'TIMEOUT')) throw error;
    }
  }
}

async function arrangeOnce(): Promise<Fixture> {
  await admin.reset();
  const { wallet, records } = clientFor(sandbox, { timeoutMs });
  const user = await admin.createUser({ balance: '1000.00' });
  const standalone = await admin.standaloneTokens(user.userId);
  const embedded = await admin.embeddedTokens(user.userId);
  const payment = await wallet.createPayment({ userAccessToken: embedded.accessToken, amount: php('10.00') });
  const transfer = await wallet.createTransfer({
    recipient: { type: 'TOKEN', value: standalone.access_token },
    amount: php('10.00'),
  });
  records.length = 0;
  return {
    wallet,
    records,
    secrets: [
      sandbox.partner.clientSecret,
      sandbox.partner.transferApiKey,
      standalone.access_token,
      standalone.refresh_token,
      embedded.accessToken,
      embedded.refreshToken,
    ],
    userId: user.userId,
    mobile: user.mobile,
    standalone: { accessToken: standalone.access_token, refreshToken: standalone.refresh_token },
    embedded,
    transferId: transfer.data.transferId,
    walletPaymentId: payment.data.walletPaymentId,
  };
}

interface Call {
  operation: WalletOperation;
  endpoint: string;
  /** Prepares what the call needs (outside the fault) and returns the call itself. */
  prepare: (fixture: Fixture) => Promise<() => Promise<unknown>>;
}

const calls: Call[] = [
  {
    operation: 'connect.token.authorization_code',
    endpoint: 'connect.token',
    prepare: async (f) => {
      const code = (await loginThroughPages(sandbox, f.wallet.authorizeUrl({ mobile: f.mobile }))).get('code') ?? '';
      f.secrets.push(code);
      return () => f.wallet.exchangeCode(code);
    },
  },
  {
    operation: 'connect.token.refresh_token',
    endpoint: 'connect.token',
    prepare: async (f) => () => f.wallet.refreshStandalone(f.standalone.refreshToken),
  },
  {
    operation: 'connect.token.client_credentials',
    endpoint: 'connect.token',
    prepare: async (f) => () => f.wallet.clientCredentials(),
  },
  {
    operation: 'op.tokens',
    endpoint: 'op.tokens',
    prepare: async (f) => () => f.wallet.refreshEmbedded(f.embedded.refreshToken),
  },
  {
    operation: 'op.profile',
    endpoint: 'op.profile',
    prepare: async (f) => () => f.wallet.getProfile(f.embedded.accessToken),
  },
  {
    operation: 'op.payments.create',
    endpoint: 'op.payments.create',
    prepare: async (f) => () =>
      f.wallet.createPayment({ userAccessToken: f.embedded.accessToken, amount: php('1.00') }),
  },
  {
    operation: 'op.payments.execute',
    endpoint: 'op.payments.execute',
    prepare: async (f) => () =>
      f.wallet.executePayment({ userAccessToken: f.embedded.accessToken, walletPaymentId: f.walletPaymentId }),
  },
  {
    operation: 'transfers.create',
    endpoint: 'transfers.create',
    prepare: async (f) => () =>
      f.wallet.createTransfer({ recipient: { type: 'TOKEN', value: f.standalone.accessToken }, amount: php('1.00') }),
  },
  {
    operation: 'transfers.execute',
    endpoint: 'transfers.execute',
    prepare: async (f) => () => f.wallet.executeTransfer(f.transferId),
  },
  {
    operation: 'transfers.retrieve',
    endpoint: 'transfers.retrieve',
    prepare: async (f) => () => f.wallet.retrieveTransfer(f.transferId),
  },
];

/** Calls that change nothing, or whose repetition is harmless (the standalone refresh token stays). */
const safeToRepeat: ReadonlySet<WalletOperation> = new Set([
  'transfers.retrieve',
  'op.profile',
  'connect.token.client_credentials',
  'connect.token.refresh_token',
]);
/** Calls a 7011 leaves safe to repeat as well: creates move no money. */
const safeAfterTemporaryFailure: ReadonlySet<WalletOperation> = new Set([
  ...safeToRepeat,
  'transfers.create',
  'op.payments.create',
]);

interface Expected {
  httpStatus: number | null;
  code: (operation: WalletOperation) => string;
  outcome: (operation: WalletOperation) => WalletOutcome;
  retryAfterMs?: number;
}

const ambiguous = (operation: WalletOperation): WalletOutcome =>
  safeToRepeat.has(operation) ? 'retryable' : 'unknown';
const isConnect = (operation: WalletOperation) => operation.startsWith('connect.');

const faultModes: Record<string, { rule: { status?: number; delayMs?: number }; expected: Expected | 'ok' }> = {
  latency: { rule: { delayMs: 150 }, expected: 'ok' },
  'error-before-effect': { rule: {}, expected: { httpStatus: 503, code: () => 'HTTP_5XX', outcome: ambiguous } },
  'error-after-effect': { rule: {}, expected: { httpStatus: 502, code: () => 'HTTP_5XX', outcome: ambiguous } },
  'reset-after-effect': {
    rule: {},
    expected: { httpStatus: null, code: () => 'CONNECTION_RESET', outcome: ambiguous },
  },
  'hang-after-effect': { rule: {}, expected: { httpStatus: null, code: () => 'TIMEOUT', outcome: ambiguous } },
  'temporary-failure': {
    rule: {},
    expected: {
      httpStatus: 400,
      code: (operation) => (isConnect(operation) ? 'temporarily_unavailable' : '7011'),
      outcome: (operation) => (safeAfterTemporaryFailure.has(operation) ? 'retryable' : 'unknown'),
    },
  },
  'rate-limited': {
    rule: {},
    expected: {
      httpStatus: 429,
      code: (operation) => (isConnect(operation) ? 'temporarily_unavailable' : 'RATE_LIMITED'),
      outcome: () => 'retryable',
      retryAfterMs: 1000,
    },
  },
  'garbage-body': { rule: {}, expected: { httpStatus: 200, code: () => 'UNPARSABLE_RESPONSE', outcome: ambiguous } },
};

describe.each(Object.keys(faultModes))('fault mode %s', (mode) => {
  const { rule, expected } = faultModes[mode] ?? { rule: {}, expected: 'ok' as const };
  it.each(calls.map((call) => [call.operation, call] as const))('%s', async (_name, call) => {
    const fixture = await arrange();
    try {
      const run = await call.prepare(fixture);
      await admin.setFaults([{ endpoint: call.endpoint, mode, rate: 1, ...rule }]);
      const started = performance.now();
      const result = await run().then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      await admin.clearFaults();
      const record = fixture.records.at(-1);
      expect(record?.operation).toBe(call.operation);
      expectNoneOf(JSON.stringify(fixture.records), fixture.secrets);

      if (expected === 'ok') {
        expect(result.ok).toBe(true);
        expect(performance.now() - started).toBeGreaterThanOrEqual(140);
        expect(record).toMatchObject({ outcome: 'ok', errorCode: null });
        return;
      }
      const error = await walletFailure(result.ok ? Promise.resolve(result.value) : Promise.reject(result.error));
      expect({
        httpStatus: error.httpStatus,
        code: error.code,
        outcome: error.outcome,
        operation: error.operation,
      }).toEqual({
        httpStatus: expected.httpStatus,
        code: expected.code(call.operation),
        outcome: expected.outcome(call.operation),
        operation: call.operation,
      });
      if (expected.retryAfterMs !== undefined) expect(error.retryAfterMs).toBe(expected.retryAfterMs);
      expectNoneOf(`${error.message} ${error.serviceMessage ?? ''}`, fixture.secrets);
      expect(record).toMatchObject({
        requestReferenceNo: error.requestReferenceNo,
        httpStatus: error.httpStatus,
        outcome: error.outcome,
        errorCode: error.code,
      });
    } finally {
      await admin.clearFaults();
      await fixture.wallet.close();
    }
  });
});

describe('reconciling after an unknown outcome', () => {
  it.each(['error-after-effect', 'reset-after-effect', 'hang-after-effect', 'garbage-body'])(
    'transfers.execute with %s: unknown, the money moved once, retrieve tells the final state',
    async (mode) => {
      const f = await arrange();
      try {
        await admin.setFaults([{ endpoint: 'transfers.execute', mode, rate: 1 }]);
        const error = await walletFailure(f.wallet.executeTransfer(f.transferId));
        await admin.clearFaults();
        expect(error.outcome).toBe('unknown');
        const retrieved = await f.wallet.retrieveTransfer(f.transferId);
        expect(retrieved.data.status).toBe('APPROVED');
        const again = await walletFailure(f.wallet.executeTransfer(f.transferId));
        expect([again.code, again.outcome]).toEqual(['TRANSFER_ALREADY_EXECUTED', 'unknown']);
        expect((await admin.ledger()).transfers.find((t) => t.transferId === f.transferId)?.executions).toBe(1);
      } finally {
        await f.wallet.close();
      }
    },
  );

  it('transfers.execute with error-before-effect: unknown to the client, and retrieve shows nothing happened', async () => {
    const f = await arrange();
    try {
      await admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-before-effect', rate: 1 }]);
      expect((await walletFailure(f.wallet.executeTransfer(f.transferId))).outcome).toBe('unknown');
      await admin.clearFaults();
      expect((await f.wallet.retrieveTransfer(f.transferId)).data.status).toBe('CREATED');
      expect((await f.wallet.executeTransfer(f.transferId)).data.status).toBe('APPROVED');
    } finally {
      await f.wallet.close();
    }
  });

  it('op.tokens with reset-after-effect: the rotation happened, so the old refresh token is gone', async () => {
    const f = await arrange();
    try {
      await admin.setFaults([{ endpoint: 'op.tokens', mode: 'reset-after-effect', rate: 1 }]);
      expect((await walletFailure(f.wallet.refreshEmbedded(f.embedded.refreshToken))).outcome).toBe('unknown');
      await admin.clearFaults();
      const retried = await walletFailure(f.wallet.refreshEmbedded(f.embedded.refreshToken));
      expect([retried.code, retried.outcome]).toEqual(['REFRESH_TOKEN_INVALID', 'rejected']);
    } finally {
      await f.wallet.close();
    }
  });

  it('op.payments.execute with error-after-effect: unknown, and the wallet was debited once', async () => {
    const f = await arrange();
    try {
      await admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-after-effect', rate: 1 }]);
      const error = await walletFailure(
        f.wallet.executePayment({ userAccessToken: f.embedded.accessToken, walletPaymentId: f.walletPaymentId }),
      );
      await admin.clearFaults();
      expect(error.outcome).toBe('unknown');
      const again = await walletFailure(
        f.wallet.executePayment({ userAccessToken: f.embedded.accessToken, walletPaymentId: f.walletPaymentId }),
      );
      expect([again.code, again.outcome]).toEqual(['PAYMENT_ALREADY_EXECUTED', 'unknown']);
      expect((await admin.user(f.userId)).balance).toBe('990.00');
    } finally {
      await f.wallet.close();
    }
  });

  it('latency beyond the time-out is a TIMEOUT: retryable for retrieve', async () => {
    const f = await arrange();
    try {
      await admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'latency', rate: 1, delayMs: 2_000 }]);
      const error = await walletFailure(f.wallet.retrieveTransfer(f.transferId));
      expect([error.code, error.outcome, error.httpStatus]).toEqual(['TIMEOUT', 'retryable', null]);
    } finally {
      await admin.clearFaults();
      await f.wallet.close();
    }
  });
});
