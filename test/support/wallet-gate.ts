// A gate in front of the real wallet client, for tests that orchestrate an overlap between two
// runs of one funding or payment: the test holds a chosen call (before it is sent, or after the
// wallet answered and before the caller sees the answer), waits until a run reaches it, and
// releases it when the other run has done its part. Every call goes to the real sandbox; the
// gate only decides when. Each run gets its own view (`as(name)`), so the test can tell which
// run sent which call.
import type { WalletClient } from '../../wallet/index.ts';

type GatedOperation = 'createTransfer' | 'executeTransfer' | 'retrieveTransfer' | 'createPayment' | 'executePayment';

export interface WalletCallSeen {
  run: string;
  operation: GatedOperation;
  /** The transfer or payment id the call names (create: the one it created, when it did). */
  id: string | null;
}

export interface Hold {
  /** Resolves when a run reached the held call. */
  reached: Promise<void>;
  /** Lets the held call go on. */
  release(): void;
  /** Whether a run has reached it. */
  isReached(): boolean;
}

interface HoldRule {
  run: string | '*';
  operation: GatedOperation;
  when: 'before' | 'after';
  hold: Hold & { wait: Promise<void> };
  used: boolean;
  resolveReached: () => void;
}

export interface WalletGate {
  /** The client a run uses: every call recorded under `run`, held where a hold says so. */
  as(run: string): WalletClient;
  /** Holds the next `operation` call of `run` ('*': any run), before it is sent or after its answer. */
  hold(operation: GatedOperation, when: 'before' | 'after', run?: string): Hold;
  /** Every call made through the gate, in the order they were sent. */
  calls: WalletCallSeen[];
}

export function walletGate(wallet: WalletClient): WalletGate {
  const rules: HoldRule[] = [];
  const calls: WalletCallSeen[] = [];

  function take(run: string, operation: GatedOperation, when: 'before' | 'after'): HoldRule | undefined {
    const rule = rules.find(
      (candidate) =>
        !candidate.used &&
        candidate.operation === operation &&
        candidate.when === when &&
        (candidate.run === '*' || candidate.run === run),
    );
    if (rule) rule.used = true;
    return rule;
  }

  async function gated<T>(
    run: string,
    operation: GatedOperation,
    id: string | null,
    idOf: (answer: T) => string | null,
    call: () => Promise<T>,
  ): Promise<T> {
    const before = take(run, operation, 'before');
    if (before) {
      before.resolveReached();
      await before.hold.wait;
    }
    const seen: WalletCallSeen = { run, operation, id };
    calls.push(seen);
    let answer: T;
    try {
      answer = await call();
    } finally {
      const after = take(run, operation, 'after');
      if (after) {
        after.resolveReached();
        await after.hold.wait;
      }
    }
    if (seen.id === null) seen.id = idOf(answer);
    return answer;
  }

  return {
    calls,
    hold(operation, when, run = '*') {
      let release!: () => void;
      let resolveReached!: () => void;
      let reachedFlag = false;
      const wait = new Promise<void>((resolve) => (release = resolve));
      const reached = new Promise<void>((resolve) => (resolveReached = resolve));
      const hold = { reached, release, wait, isReached: () => reachedFlag };
      rules.push({
        run,
        operation,
        when,
        hold,
        used: false,
        resolveReached: () => {
          reachedFlag = true;
          resolveReached();
        },
      });
      return hold;
    },
    as(run: string): WalletClient {
      return new Proxy(wallet, {
        get(target, property, receiver) {
          switch (property) {
            case 'createTransfer':
              return (...args: Parameters<WalletClient['createTransfer']>) =>
                gated(
                  run,
                  'createTransfer',
                  null,
                  (answer: Awaited<ReturnType<WalletClient['createTransfer']>>) => answer.data.transferId,
                  () => target.createTransfer(...args),
                );
            case 'executeTransfer':
              return (transferId: string) =>
                gated(
                  run,
                  'executeTransfer',
                  transferId,
                  () => transferId,
                  () => target.executeTransfer(transferId),
                );
            case 'retrieveTransfer':
              return (transferId: string) =>
                gated(
                  run,
                  'retrieveTransfer',
                  transferId,
                  () => transferId,
                  () => target.retrieveTransfer(transferId),
                );
            case 'createPayment':
              return (...args: Parameters<WalletClient['createPayment']>) =>
                gated(
                  run,
                  'createPayment',
                  null,
                  (answer: Awaited<ReturnType<WalletClient['createPayment']>>) => answer.data.walletPaymentId,
                  () => target.createPayment(...args),
                );
            case 'executePayment':
              return (...args: Parameters<WalletClient['executePayment']>) =>
                gated(
                  run,
                  'executePayment',
                  args[0].walletPaymentId,
                  () => args[0].walletPaymentId,
                  () => target.executePayment(...args),
                );
            default:
              return Reflect.get(target, property, receiver);
          }
        },
      });
    },
  };
}
