// The op service: embedded token refresh (which rotates the pair), the encrypted profile and
// merchant payments. Every call carries the cached client token, renewed once if refused.
import { z } from 'zod';
import type { Amount } from '../domain/money.ts';
import type { ClientTokenCache } from './client-token.ts';
import { CallNotSent, isCredentialsRefusal, isWalletError, WalletError } from './errors.ts';
import type { WalletOperation } from './operations.ts';
import { ProfileError } from './profile.ts';
import type { ProfileReader } from './profile.ts';
import type { Profile } from './profile-schema.ts';
import type { WalletCall, WalletResult, WalletTransport } from './transport.ts';
import { UnusableResponseError, parseWith } from './transport.ts';
import { toWireAmount, wireAmountSchema } from './wire-amount.ts';

const embeddedTokensSchema = z.object({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1),
  /** UNIX seconds. */
  expiresAt: z.number().int().positive(),
});

const profileResponseSchema = z.object({ data: z.string().min(1) });

const paymentRecordSchema = z
  .object({
    id: z.string().min(1),
    p2mId: z.string().min(1),
    requestReferenceNumber: z.string().min(1),
    amount: wireAmountSchema,
    fee: wireAmountSchema,
  })
  .transform(({ id, ...rest }) => ({ walletPaymentId: id, ...rest }));
const parsePayment = parseWith(paymentRecordSchema);

export interface EmbeddedTokens {
  accessToken: string;
  refreshToken: string;
  /** The service's expiry of the new pair (UNIX seconds in the answer). */
  expiresAt: Date;
}

export type Payment = z.output<typeof paymentRecordSchema>;

export interface OpSettings {
  opUrl: string;
  p2mId: string;
}

export interface OpCalls {
  refreshEmbedded(refreshToken: string): Promise<WalletResult<EmbeddedTokens>>;
  getProfile(userAccessToken: string): Promise<WalletResult<Profile>>;
  createPayment(input: { userAccessToken: string; amount: Amount } & SendWhile): Promise<WalletResult<Payment>>;
  /** The merchant every payment is created for (MERCHANT_P2M_ID): a create answer must name it. */
  readonly merchantP2mId: string;
  executePayment(
    input: { userAccessToken: string; walletPaymentId: string } & SendWhile,
  ): Promise<WalletResult<Payment>>;
}

/**
 * A money call's bound: asked right before each of its requests goes out (after the client token it needs was
 * fetched, and again before the one sent once more with a renewed token); false: nothing is sent, `CallNotSent`. It
 * may read the database (whether its run still owns the payment), and what it throws is the call's.
 */
export interface SendWhile {
  mayStillSend?: () => boolean | Promise<boolean>;
}

/** The op service's word that the client token was refused: nothing of the call was taken. */
function clientTokenRefused(error: unknown): error is WalletError {
  return isWalletError(error) && error.operation !== 'connect.token.client_credentials' && isCredentialsRefusal(error);
}

/**
 * The partner's own client credentials refused: the token endpoint's 4xx (`invalid_client`, a secret rotated at the
 * wallet and not here), or the op service refusing even a token fetched anew. Nothing of the call was sent or taken,
 * and it says nothing about the request or the user, only about this partner's configuration: the call is safe to
 * send again once that is mended. So it reads `retryable`, never `rejected`: a payment, an execute or a session waits
 * it out and ends by its own bound, instead of ending refused, FAILED or "the user must log in again" at once.
 */
function credentialsRefused(error: WalletError): WalletError {
  return new WalletError(
    {
      operation: error.operation,
      httpStatus: error.httpStatus,
      code: error.code,
      outcome: 'retryable',
      requestReferenceNo: error.requestReferenceNo,
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      ...(error.serviceMessage === undefined ? {} : { serviceMessage: error.serviceMessage }),
      cause: error,
    },
    "the partner's client credentials were refused: nothing was sent",
  );
}

type OpRequest<T> = Pick<WalletCall<T>, 'operation' | 'method' | 'path' | 'body' | 'parse'> &
  SendWhile & {
    userAccessToken?: string;
    secrets: readonly string[];
  };

export function createOpCalls(
  settings: OpSettings,
  transport: WalletTransport,
  clientTokens: ClientTokenCache,
  profiles: ProfileReader,
): OpCalls {
  const sendWith = async <T>(clientToken: string, call: OpRequest<T>) => {
    if (call.mayStillSend && !(await call.mayStillSend())) throw new CallNotSent(call.operation);
    return transport.send<T>({
      operation: call.operation,
      method: call.method,
      baseUrl: settings.opUrl,
      path: call.path,
      headers: {
        accept: 'application/json',
        'content-type': 'application/json',
        authorization: `Bearer ${clientToken}`,
        ...(call.userAccessToken === undefined ? {} : { 'x-authorization': call.userAccessToken }),
      },
      ...(call.body === undefined ? {} : { body: call.body }),
      secrets: [clientToken, ...(call.userAccessToken === undefined ? [] : [call.userAccessToken]), ...call.secrets],
      parse: call.parse,
    });
  };

  /** The client token to send with, a refusal of the partner's credentials read as what it is (credentialsRefused). */
  async function clientToken(): Promise<string> {
    try {
      return await clientTokens.get();
    } catch (error) {
      throw isWalletError(error) && error.outcome === 'rejected' ? credentialsRefused(error) : error;
    }
  }

  /** A 401 CLIENT_TOKEN_INVALID means nothing happened: renew the client token and send once more. */
  async function opCall<T>(call: OpRequest<T>): Promise<WalletResult<T>> {
    const first = await clientToken();
    try {
      return await sendWith(first, call);
    } catch (error) {
      if (!clientTokenRefused(error)) throw error;
      clientTokens.invalidate(first);
    }
    try {
      return await sendWith(await clientToken(), call);
    } catch (error) {
      throw clientTokenRefused(error) ? credentialsRefused(error) : error;
    }
  }

  const operations = {
    refresh: 'op.tokens',
    profile: 'op.profile',
    create: 'op.payments.create',
    execute: 'op.payments.execute',
  } as const satisfies Record<string, WalletOperation>;

  return {
    merchantP2mId: settings.p2mId,

    refreshEmbedded(refreshToken) {
      return opCall({
        operation: operations.refresh,
        method: 'POST',
        path: '/tokens',
        body: JSON.stringify({ refreshToken }),
        secrets: [refreshToken],
        parse: (body) => {
          const tokens = parseWith(embeddedTokensSchema)(body);
          return { ...tokens, expiresAt: new Date(tokens.expiresAt * 1000) };
        },
      });
    },

    getProfile(userAccessToken) {
      return opCall({
        operation: operations.profile,
        method: 'GET',
        path: '/profile',
        userAccessToken,
        secrets: [],
        parse: async (body) => {
          const { data } = parseWith(profileResponseSchema)(body);
          try {
            return await profiles.read(data);
          } catch (error) {
            // Keys or content are wrong: repeating the read would fail the same way.
            if (error instanceof ProfileError) throw new UnusableResponseError(error.code, 'rejected', error.message);
            throw error;
          }
        },
      });
    },

    async createPayment({ userAccessToken, amount, mayStillSend }) {
      const wireAmount = toWireAmount(amount, operations.create);
      return opCall({
        operation: operations.create,
        method: 'POST',
        path: '/merchant/payments',
        userAccessToken,
        ...(mayStillSend ? { mayStillSend } : {}),
        body: JSON.stringify({ p2mId: settings.p2mId, amount: wireAmount }),
        secrets: [],
        parse: parsePayment,
      });
    },

    executePayment({ userAccessToken, walletPaymentId, mayStillSend }) {
      return opCall({
        operation: operations.execute,
        method: 'POST',
        path: `/merchant/payments/${encodeURIComponent(walletPaymentId)}/execute`,
        userAccessToken,
        ...(mayStillSend ? { mayStillSend } : {}),
        secrets: [],
        parse: (body) => {
          // An execute's answer must be about the payment executed, as a transfer's must (wallet/transfers.ts): another
          // payment's record is no answer at all (outcome unknown: the execute is asked again, whose 409 is proof).
          const payment = parsePayment(body);
          if (payment.walletPaymentId !== walletPaymentId)
            throw new UnusableResponseError(
              'PAYMENT_MISMATCH',
              'unknown',
              'the answer is about another payment than the one executed',
              true,
            );
          return payment;
        },
      });
    },
  };
}
