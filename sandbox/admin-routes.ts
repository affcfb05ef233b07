// The admin API under /_sandbox (contract-decisions section 9): test users, codes, tokens, the
// launch, the ledger, the clock, faults, settings and reset. JSON in and out, decimal strings.
import express, { Router, type Request } from 'express';
import type { Agent } from 'undici';
import { z } from 'zod';
import { phpDecimalSchema } from './amounts.ts';
import { answerWith, parseBody } from './answers.ts';
import type { SandboxContext } from './context.ts';
import { documentUrlBuilder, requestBaseUrl } from './documents.ts';
import { configureFaults, describeFaults, faultConfigurationSchema } from './faults.ts';
import { launchPartnerSession } from './launch.ts';
import { publicSettings, settingsUpdateSchema } from './settings.ts';
import { issueEmbeddedTokens, issueStandaloneTokens } from './tokens.ts';
import { plantExecutedTransfers } from './transfers.ts';
import { createCashInCode, createUser, createUserSchema, requireUser, userDetail, userSummary } from './users.ts';

const kycSchema = z.object({ kycLevel: z.enum(['KYC0', 'KYC1']) }).strict();
const updateUserSchema = z
  .object({
    kycLevel: z.enum(['KYC0', 'KYC1']),
    balance: phpDecimalSchema,
    walletLimit: phpDecimalSchema,
    blocked: z.boolean(),
    isPartnerAccount: z.boolean(),
    password: z.string().min(1).max(200),
  })
  .partial()
  .strict();
const launchSchema = z.object({ userId: z.string().min(1) }).strict();
const clockSchema = z
  .object({
    advanceSeconds: z
      .number()
      .min(0)
      .max(10 * 365 * 24 * 3600),
  })
  .strict();
/** Transfers recorded as already executed, in one call: what a bench or a test plants a day of fundings against. */
const plantedTransfersSchema = z
  .object({
    recipientUserId: z.string().min(1),
    amount: phpDecimalSchema,
    count: z.number().int().min(1).max(10_000),
    status: z.enum(['APPROVED', 'DECLINED']).default('APPROVED'),
  })
  .strict();

const iso = (ms: number): string => new Date(ms).toISOString();

export function adminRouter(context: SandboxContext, senderAgent: Agent): Router {
  const router = Router();
  router.use(express.json({ limit: '256kb' }));
  const { state, clock } = context;
  const detail = (req: Request, userId: string) =>
    userDetail(requireUser(context, userId), documentUrlBuilder(context, requestBaseUrl(req)));
  const userIdParam = (req: Request): string => String(req.params.userId);

  router.get(
    '/partner',
    answerWith(() => ({ status: 200, body: context.registration })),
  );

  router.post(
    '/users',
    answerWith((req) => ({
      status: 201,
      body: userSummary(createUser(context, parseBody(createUserSchema, req.body))),
    })),
  );
  router.get(
    '/users',
    answerWith(() => ({ status: 200, body: { users: [...state.users.values()].map(userSummary) } })),
  );
  router.get(
    '/users/:userId',
    answerWith((req) => ({ status: 200, body: detail(req, userIdParam(req)) })),
  );
  router.patch(
    '/users/:userId',
    answerWith((req) => {
      const user = requireUser(context, userIdParam(req));
      Object.assign(user, parseBody(updateUserSchema, req.body));
      return { status: 200, body: detail(req, user.userId) };
    }),
  );
  router.post(
    '/users/:userId/kyc',
    answerWith((req) => {
      const user = requireUser(context, userIdParam(req));
      user.kycLevel = parseBody(kycSchema, req.body).kycLevel;
      return { status: 200, body: detail(req, user.userId) };
    }),
  );
  router.post(
    '/users/:userId/cash-in-codes',
    answerWith((req) => {
      const code = createCashInCode(context, requireUser(context, userIdParam(req)));
      return { status: 201, body: { code: code.code, expiresAt: iso(code.expiresAt) } };
    }),
  );
  router.post(
    '/users/:userId/standalone-tokens',
    answerWith((req) => ({
      status: 201,
      body: issueStandaloneTokens(context, requireUser(context, userIdParam(req))),
    })),
  );
  router.post(
    '/users/:userId/embedded-tokens',
    answerWith((req) => ({
      status: 201,
      body: issueEmbeddedTokens(context, requireUser(context, userIdParam(req)).userId),
    })),
  );

  router.post(
    '/launch',
    answerWith(async (req) => {
      const user = requireUser(context, parseBody(launchSchema, req.body).userId);
      const result = await launchPartnerSession(context, user, senderAgent);
      if (!result.ok) {
        return {
          status: 502,
          body: { code: 'PARTNER_SESSION_FAILED', message: result.message, partnerStatus: result.partnerStatus },
        };
      }
      return { status: 200, body: { sessionId: result.sessionId, landingUrl: result.landingUrl } };
    }),
  );

  router.get(
    '/ledger',
    answerWith(() => ({
      status: 200,
      body: {
        transfers: [...state.transfers.values()].map((transfer) => ({
          transferId: transfer.transferId,
          status: transfer.status,
          recipientUserId: transfer.recipientUserId,
          amount: transfer.amount,
          executions: transfer.executions,
          createdAt: iso(transfer.createdAt),
          recipientType: transfer.recipientType,
          decline: transfer.decline,
        })),
        payments: [...state.payments.values()].map((payment) => ({
          paymentId: payment.paymentId,
          status: payment.status,
          userId: payment.userId,
          amount: payment.amount,
          fee: payment.fee,
          executions: payment.executions,
          createdAt: iso(payment.createdAt),
        })),
        refreshes: state.refreshes.map((entry) => ({ kind: entry.kind, userId: entry.userId, at: iso(entry.at) })),
        partnerFundingBalance: state.settings.partnerFundingBalance,
      },
    })),
  );

  // An extension of section 9: transfers that were created and executed, as the wallet would hold
  // them after a day of fundings, made in one call (no balance moves): `walletflow bench
  // --settlement` plants its day of approved fundings against them.
  router.post(
    '/transfers',
    answerWith((req) => {
      const input = parseBody(plantedTransfersSchema, req.body);
      const recipient = requireUser(context, input.recipientUserId);
      return {
        status: 201,
        body: { transferIds: plantExecutedTransfers(context, { ...input, recipientUserId: recipient.userId }) },
      };
    }),
  );

  router.get(
    '/clock',
    answerWith(() => ({ status: 200, body: { now: iso(clock.now()) } })),
  );
  router.post(
    '/clock',
    answerWith((req) => {
      clock.advance(parseBody(clockSchema, req.body).advanceSeconds);
      return { status: 200, body: { now: iso(clock.now()) } };
    }),
  );

  router.get(
    '/faults',
    answerWith(() => ({ status: 200, body: describeFaults(state.faults) })),
  );
  router.put(
    '/faults',
    answerWith((req) => {
      state.faults = configureFaults(parseBody(faultConfigurationSchema, req.body), context.defaultSeed);
      return { status: 200, body: describeFaults(state.faults) };
    }),
  );
  // The executes a late-effect fault queued take effect now rather than when their delay is up.
  router.post(
    '/faults/late-effects/release',
    answerWith(async () => ({ status: 200, body: { released: await context.faultContext.lateEffects.releaseAll() } })),
  );

  router.get(
    '/settings',
    answerWith(() => ({ status: 200, body: publicSettings(state.settings) })),
  );
  router.put(
    '/settings',
    answerWith((req) => {
      Object.assign(state.settings, parseBody(settingsUpdateSchema, req.body));
      return { status: 200, body: publicSettings(state.settings) };
    }),
  );

  router.post(
    '/reset',
    answerWith(() => {
      context.reset();
      return { status: 204 };
    }),
  );

  return router;
}
