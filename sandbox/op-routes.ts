// The op service under /op: embedded token refresh, profile and merchant payments, with a client
// token in Authorization and, for profile and payments, the user's token in X-Authorization.
import express, { Router, type Request } from 'express';
import { z } from 'zod';
import { wireAmountSchema, walletAmountFromWire } from './amounts.ts';
import { parseBody, serviceError } from './answers.ts';
import type { SandboxContext } from './context.ts';
import { documentUrlBuilder, requestBaseUrl } from './documents.ts';
import { withFaults } from './faults.ts';
import { createPayment, executePayment, paymentView } from './payments.ts';
import { renderProfile } from './profiles.ts';
import { createProfileSealer } from './profile-token.ts';
import { bearerToken, opRequestReference } from './request-checks.ts';
import { isValidClientToken, rotateEmbeddedTokens, validUserAccessToken } from './tokens.ts';
import type { AccessTokenRecord } from './state.ts';

const refreshBodySchema = z.object({ refreshToken: z.string().min(1) });
const createPaymentSchema = z.object({ p2mId: z.string().min(1), amount: wireAmountSchema });

export function opRouter(context: SandboxContext): Router {
  const router = Router();
  router.use(express.json({ limit: '64kb' }));
  const sealer = createProfileSealer(context.profileEncryptionKey, context.registration.profileVerificationJwk);

  const requireClientToken = (req: Request): void => {
    const token = bearerToken(req);
    if (token === null || !isValidClientToken(context, token)) {
      throw serviceError(401, 'CLIENT_TOKEN_INVALID', 'Client token is missing, invalid or expired');
    }
  };
  const requireUserToken = (req: Request): AccessTokenRecord => {
    // The interface sends the bare token; a "Bearer " prefix is tolerated.
    const raw = (req.get('x-authorization') ?? '').replace(/^Bearer\s+/i, '').trim();
    const record = raw === '' ? null : validUserAccessToken(context, raw);
    if (!record) throw serviceError(401, 'USER_TOKEN_INVALID', 'User access token is missing, invalid or expired');
    return record;
  };

  router.post(
    '/tokens',
    withFaults('op.tokens', 'service', context.faultContext, (req) => {
      requireClientToken(req);
      opRequestReference(req);
      const body = parseBody(refreshBodySchema, req.body);
      return { status: 200, body: rotateEmbeddedTokens(context, body.refreshToken) };
    }),
  );

  router.get(
    '/profile',
    withFaults('op.profile', 'service', context.faultContext, async (req) => {
      requireClientToken(req);
      opRequestReference(req);
      const token = requireUserToken(req);
      const user = context.state.users.get(token.userId);
      if (!user) throw serviceError(401, 'USER_TOKEN_INVALID', 'User access token is missing, invalid or expired');
      const scopes = token.scopes.filter((scope) => context.registration.scopes.includes(scope));
      const profile = renderProfile(user, scopes, documentUrlBuilder(context, requestBaseUrl(req)));
      return { status: 200, body: { data: await sealer.seal(profile) } };
    }),
  );

  router.post(
    '/merchant/payments',
    withFaults('op.payments.create', 'service', context.faultContext, (req) => {
      requireClientToken(req);
      const requestReferenceNumber = opRequestReference(req);
      const token = requireUserToken(req);
      const body = parseBody(createPaymentSchema, req.body);
      const amount = walletAmountFromWire(body.amount, 'amount');
      const record = createPayment(context, {
        p2mId: body.p2mId,
        amount,
        userId: token.userId,
        requestReferenceNumber,
      });
      return { status: 200, body: paymentView(record) };
    }),
  );

  router.post(
    '/merchant/payments/:paymentId/execute',
    withFaults('op.payments.execute', 'service', context.faultContext, (req) => {
      requireClientToken(req);
      opRequestReference(req);
      const token = requireUserToken(req);
      const record = executePayment(context, String(req.params.paymentId), token.userId);
      return { status: 200, body: paymentView(record) };
    }),
  );

  return router;
}
