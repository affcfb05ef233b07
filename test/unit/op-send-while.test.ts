// A merchant payment's create and execute are sent only while their caller's check still holds, asked right before
// each request goes out: after the client token it needs was fetched (a client-credentials call of up to the wallet's
// time-out, about hourly), and again before the one sent once more with a renewed token (wallet/op.ts). The check may
// read the database (the payment's fence: activities/payment.ts), so it may be asynchronous.
import { describe, expect, it } from 'vitest';
import { createOpCalls } from '../../wallet/op.ts';
import { CallNotSent, WalletError } from '../../wallet/errors.ts';
import type { WalletCall } from '../../wallet/transport.ts';

function stack(options: { refuseFirstToken?: boolean } = {}) {
  const sent: string[] = [];
  const events: string[] = [];
  let tokens = 0;
  const clientTokens = {
    async get() {
      tokens += 1;
      events.push(`token ${tokens}`);
      return `client-token-${tokens}`;
    },
    invalidate() {
      events.push('invalidated');
    },
  };
  const transport = {
    async send<T>(call: WalletCall<T>) {
      const authorization = call.headers.authorization ?? '';
      events.push(`sent with ${authorization}`);
      sent.push(call.path);
      if (options.refuseFirstToken && authorization === 'Bearer client-token-1')
        throw new WalletError({
          operation: call.operation,
          code: 'CLIENT_TOKEN_INVALID',
          httpStatus: 401,
          outcome: 'rejected',
          requestReferenceNo: 'r-1',
        });
      return { data: null as T, requestReferenceNo: 'r-2' };
    },
    async close() {},
  };
  const op = createOpCalls(
    { opUrl: 'https://op.example', p2mId: 'p2m-1' },
    transport as never,
    clientTokens,
    {} as never,
  );
  return { op, sent, events };
}

describe('a payment call’s check before it is sent', () => {
  it('is asked after the client token was fetched, and may read the database: a run overtaken meanwhile sends nothing', async () => {
    // Found by a read: the fence was read before the call began, and the client token fetched after it, so a run
    // overtaken while the token came (a takeover that executed) still sent its execute.
    const { op, sent, events } = stack();
    const check = async () => {
      events.push('checked');
      await new Promise((resolve) => setTimeout(resolve, 1));
      return false;
    };
    await expect(
      op.executePayment({ userAccessToken: 'user', walletPaymentId: 'pay-1', mayStillSend: check }),
    ).rejects.toBeInstanceOf(CallNotSent);
    expect(sent).toEqual([]);
    expect(events).toEqual(['token 1', 'checked']);
  });

  it('is asked again before the request sent once more with a renewed client token', async () => {
    const { op, sent, events } = stack({ refuseFirstToken: true });
    let checks = 0;
    const check = async () => {
      checks += 1;
      events.push(`checked ${checks}`);
      return checks === 1;
    };
    await expect(
      op.executePayment({ userAccessToken: 'user', walletPaymentId: 'pay-1', mayStillSend: check }),
    ).rejects.toBeInstanceOf(CallNotSent);
    expect(sent).toHaveLength(1);
    expect(events).toEqual([
      'token 1',
      'checked 1',
      'sent with Bearer client-token-1',
      'invalidated',
      'token 2',
      'checked 2',
    ]);
  });
});
