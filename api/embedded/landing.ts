// The landing page (GET /app?sessionId=…) and the partner pages behind it. The session id is
// consumed atomically and traded for a web session cookie, and the same response shows the partner
// page (200: a client that follows no redirect and keeps no cookies still sees it); the page drops
// the id from its address at once, so a reload asks for /app, never the used id. A used or expired
// id gets 410, an unknown one 404, never partner content, whoever asks. The page waits briefly for
// onboarding, then shows a self-refreshing loading state. Top up and pay
// are CSRF-protected forms whose idempotency key is bound to the form instance; their progress
// pages poll a JSON status that answers for this web session's fundings and payments only. The
// pages' scripts are files (assets/), served under /app/assets by page-assets.ts.
import { overloadOf } from '../../lib/admission.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import express, { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import { z } from 'zod';
import { reopenFromWalletCodes, sessionIdSchema } from '../../domain/embedded-session.ts';
import { amountSchema, normaliseAmount, type Amount } from '../../domain/money.ts';
import type { Database } from '../../lib/database.ts';
import { hashBearer } from '../../links/embedded-sessions.ts';
import type { Logger } from '../../lib/logger.ts';
import { VaultError, type TokenVault } from '../../links/token-vault.ts';
import {
  appIdempotencyPrefix,
  createAppSession,
  csrfMatches,
  readAppSession,
  readAppSessionByCookie,
  setAppCookie,
  type AppSessionView,
} from './web-sessions.ts';
import { paymentOutcome, reopenFromWallet, topUpOutcome, type OutcomeStatus } from './outcome-messages.ts';
import type { OnboardingDispatcher } from './onboarding-dispatcher.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import { amountOf } from '../../fundings/funding-view.ts';
import { homePage, landingCsp, loadingPage, messagePage, progressPage, type HomePage, type MessagePage } from './landing-pages.ts';
import { pageAssetsRouter } from './page-assets.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import { clientErrorOf } from '../http/client-errors.ts';
import { money, userAccount } from '../../domain/ledger.ts';
import { fromThousandths, toThousandths } from '../../domain/money.ts';
import { isFinalFundingStatus } from '../../domain/funding.ts';
import { isFinalPaymentStatus } from '../../domain/payment.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { userHeadroom, type FundingLimits } from '../../ledger/limits.ts';
import type { RateLimiter, RateVerdict } from '../http/rate-limit.ts';

export interface LandingDependencies {
  database: Database;
  /** A session whose onboarding has not started yet (still in the outbox) has it started when its user arrives. */
  onboarding: Pick<OnboardingDispatcher, 'expedite'>;
  fundings: Pick<FundingService, 'start'>;
  payments: Pick<PaymentService, 'start'>;
  vault: Pick<TokenVault, 'getAccessToken'>;
  /** The user's partner balance (USER:{partnerUserId}). */
  ledger: Pick<Ledger, 'account'>;
  /** Section 10's limits: what the page offers never exceeds them; absent: none. */
  limits?: FundingLimits;
  logger: Logger;
  webSessionTtlMs: number;
  /** true: always Secure cookies (PUBLIC_URL is https); absent: Secure when the request came over HTTPS. */
  secureCookies?: boolean | undefined;
  /** How long GET /app waits for onboarding before it shows the loading page. */
  onboardingWaitMs?: number;
  /** Requests per client address under /app (PUBLIC_RATE_LIMIT_PER_MINUTE); absent: unlimited. */
  rateLimiter?: RateLimiter;
  /**
   * The pages' own status polls of a live web session (GET /app/status, /app/activity,
   * /app/top-ups/{id}/status, /app/payments/{id}/status), counted per web session
   * (WEB_SESSION_POLL_LIMIT_PER_MINUTE) instead of against the address: many users behind one
   * carrier NAT share an address. A poll without a live web session counts against the address.
   * Absent: polls count against the address like everything else.
   */
  pollRateLimiter?: RateLimiter;
  now?: () => number;
}

const uuidSchema = z.uuid();

/** The pages' own JSON polls (assets/loading.js, home.js, progress.js). */
const statusPollPath = /^\/app\/(status|activity|(top-ups|payments)\/[^/]+\/status)$/;
export const isStatusPoll = (path: string): boolean => statusPollPath.test(path);

/** The id in a progress page's path (/app/top-ups/{id}, /app/payments/{id}): anything else is not found. */
export const progressIdSchema = uuidSchema;

/**
 * The top-up and pay forms (application/x-www-form-urlencoded). Each field is checked on its own:
 * a missing or wrong CSRF token is 403 (csrfMatches), a bad form key 400, an amount the page
 * cannot read shows the page again with a message (amountFrom).
 */
export const appFormSchema = z.object({
  /** The synchronizer token of the page that showed the form. */
  csrf: z.string().min(1).max(128),
  /** Chosen by the page per form instance: it is the form's idempotency key (a resend starts nothing new). */
  formKey: uuidSchema,
  /** Pesos as typed: "50", "50.25", "1,000.50". */
  amount: z.string(),
});

/** GET /app/status: the web session's onboarding, for the loading page's poll. */
export const appSessionStateSchema = z.object({ state: z.enum(['pending', 'ready', 'failed']) });

/** The status polls' JSON refusals (401, 404, 429, …): `{ code, message }`, never a page. */
export const appJsonErrorSchema = z.object({ code: z.string(), message: z.string() });

/** GET /app/activity: the money page's recent fundings and payments, for its live states. */
export const appActivitySchema = z.object({
  available: z.string(),
  items: z.array(z.object({ kind: z.enum(['withdrawal', 'deposit', 'payment']), id: z.string(), status: z.string(), final: z.boolean(), amount: z.string(), at: z.string() })),
});
export type AppActivity = z.infer<typeof appActivitySchema>;

type AppJson = z.infer<typeof appSessionStateSchema> | z.infer<typeof appJsonErrorSchema> | OutcomeStatus | AppActivity;

const pages = {
  unknown: {
    tone: 'error',
    title: 'This link is not valid',
    paragraphs: ['We do not know this session. Please open the app again from your wallet.'],
  },
  used: {
    tone: 'error',
    title: 'This link was already used',
    paragraphs: ['For your security, each link from the wallet opens the app once. Please open the app again from your wallet.'],
  },
  expired: {
    tone: 'error',
    title: 'This link has expired',
    paragraphs: ['Links from the wallet must be opened within a couple of minutes. Please open the app again from your wallet.'],
  },
  noSession: {
    tone: 'info',
    title: 'Open the app from your wallet',
    paragraphs: ['Your session has ended or was never started. Please open the app again from your wallet.'],
  },
  reopen: { tone: 'error', title: 'Please reopen the app', paragraphs: [reopenFromWallet] },
  onboardingFailed: {
    tone: 'error',
    title: 'We could not open your account',
    paragraphs: ['The wallet did not answer in time. Please close this page and open the app again from your wallet.'],
  },
  csrf: {
    tone: 'error',
    title: 'This form has expired',
    paragraphs: ['For your security, this form can only be sent from the page that showed it. Please go back to the app and try again.'],
  },
  formReused: {
    tone: 'error',
    title: 'This form was already sent',
    paragraphs: ['This form was already sent with another amount. Please go back to the app and start again.'],
  },
  notFound: { tone: 'error', title: 'Not found', paragraphs: ['There is nothing here for this session.'] },
  tooMany: { tone: 'error', title: 'Too many requests', paragraphs: ['Please wait a moment and try again.'] },
  formTooLarge: { tone: 'error', title: 'This form is too large', paragraphs: ['Please go back to the app and enter the amount again.'] },
  unreadable: { tone: 'error', title: 'We could not read this request', paragraphs: ['Please go back to the app and try again.'] },
  broken: { tone: 'error', title: 'Something went wrong', paragraphs: ['Please try again in a moment, or open the app again from your wallet.'] },
  busy: { tone: 'error', title: 'Busy right now', paragraphs: ['Many people are using this at the same time. Nothing was done with your money: please try again in a few seconds.'] },
} satisfies Record<string, MessagePage>;

/** A refusal as the user reads it: which limit, and what is left (the detail carries the amounts). */
function refusalInWords(code: string, detail: string): string {
  const left = /([\d.,]+ PHP) (left today|available)/.exec(detail);
  switch (code) {
    case 'INSUFFICIENT_FUNDS':
      return `Your balance does not cover this withdrawal${left ? `: you have ${left[1]} available` : ''}.`;
    case 'AMOUNT_TOO_SMALL':
      return `This amount is below the smallest withdrawal (${detail.replace(/^.*at least /, '')}).`;
    case 'AMOUNT_TOO_LARGE':
      return `This amount is above the largest withdrawal (${detail.replace(/^.*at most /, '')}).`;
    case 'DAILY_LIMIT_EXCEEDED':
      return left ? `This is more than today’s withdrawal limit allows: ${left[1]} left today.` : 'You have reached today’s number of withdrawals. You can withdraw again tomorrow.';
    case 'VELOCITY_LIMIT_EXCEEDED':
      return 'You have made several withdrawals just now. Please wait a minute and try again.';
    default:
      return 'This withdrawal cannot be made right now.';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function landingRouter(deps: LandingDependencies): Router {
  const router = Router();
  const now = deps.now ?? Date.now;
  const onboardingWaitMs = deps.onboardingWaitMs ?? 5000;
  const readForm = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });

  function securityHeaders(res: Response, nonce?: string): void {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (nonce) res.setHeader('Content-Security-Policy', landingCsp(nonce));
  }

  function html(res: Response, status: number, render: (nonce: string) => string): void {
    const nonce = randomBytes(16).toString('base64');
    securityHeaders(res, nonce);
    res.status(status).type('html').send(render(nonce));
  }

  const message = (res: Response, status: number, content: MessagePage) => html(res, status, (nonce) => messagePage(nonce, content));

  function json(res: Response, status: number, body: AppJson): void {
    securityHeaders(res);
    res.status(status).json(body);
  }

  // The pages' scripts (/app/assets/…), before the rate limit: a browser fetches each once (they
  // are cached for good), so they would only use up the pages' allowance.
  router.use(pageAssetsRouter());

  // The request's web session, read once per request (the rate limit and the route both need it).
  const sessions = new WeakMap<Request, Promise<AppSessionView | null>>();
  const sessionOf = (req: Request): Promise<AppSessionView | null> => {
    let session = sessions.get(req);
    if (!session) {
      session = readAppSession(deps.database, req, new Date(now()));
      sessions.set(req, session);
    }
    return session;
  };

  const addressLimiter = deps.rateLimiter;
  const pollLimiter = deps.pollRateLimiter;
  if (addressLimiter) {
    // A status poll of a live web session counts against that session's own budget; anything else
    // (pages, forms, polls without a live session: a forged cookie buys nothing) against the address.
    router.use('/app', async (req, res, next) => {
      try {
        let verdict: RateVerdict | undefined;
        if (pollLimiter && req.method === 'GET' && isStatusPoll(`${req.baseUrl}${req.path}`)) {
          const session = await sessionOf(req);
          if (session) verdict = pollLimiter.take(`web-session:${session.id}`);
        }
        verdict ??= addressLimiter.take(req.ip);
        if (verdict.allowed) {
          next();
          return;
        }
        res.setHeader('Retry-After', String(verdict.retryAfterSeconds));
        // The polls answer JSON; the pages, a page.
        if (req.path.endsWith('/status') || req.path === '/activity') {
          json(res, 429, { code: 'RATE_LIMITED', message: `too many requests; retry after ${verdict.retryAfterSeconds} s` });
        } else message(res, 429, pages.tooMany);
      } catch (error) {
        next(error);
      }
    });
  }

  async function consumeSessionId(req: Request, res: Response, raw: unknown): Promise<void> {
    const parsed = sessionIdSchema.safeParse(raw);
    if (!parsed.success) {
      message(res, 404, pages.unknown);
      return;
    }
    const sessionIdHash = hashBearer(parsed.data);
    // One request wins the id: the UPDATE's WHERE is the single-use check, and the web session is
    // created in the same transaction.
    const started = await deps.database.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<Array<{ id: string }>>`
        UPDATE embedded_session SET consumed_at = now(), updated_at = now()
        WHERE session_id_hash = ${sessionIdHash} AND consumed_at IS NULL AND expires_at > now()
        RETURNING id`;
      const row = rows[0];
      if (!row) return null;
      const { cookieValue } = await createAppSession(tx, row.id, new Date(now() + deps.webSessionTtlMs));
      return { cookieValue, sessionRecordId: row.id };
    });
    if (!started) {
      const known = await deps.database.embeddedSession.findUnique({ where: { sessionIdHash }, select: { id: true, consumedAt: true } });
      deps.logger.info({ sessionRecordId: known?.id, reason: !known ? 'unknown' : known.consumedAt ? 'used' : 'expired' }, 'landing page refused a session id');
      if (!known) message(res, 404, pages.unknown);
      else message(res, 410, known.consumedAt ? pages.used : pages.expired);
      return;
    }
    deps.logger.info({ sessionRecordId: started.sessionRecordId }, 'web session started');
    setAppCookie(res, started.cookieValue, {
      maxAgeSeconds: Math.floor(deps.webSessionTtlMs / 1000),
      secure: deps.secureCookies ?? req.secure,
    });
    const session = await readAppSessionByCookie(deps.database, started.cookieValue, new Date(now()));
    if (!session) throw new Error('the web session created with the consumed session id is not readable');
    await showHome(res, session);
  }

  /** The partner page of a web session: the home page, or the loading, reopen or failure page. */
  async function showHome(res: Response, session: AppSessionView): Promise<void> {
    const embedded = await activeLink(res, session, true);
    if (!embedded) return;
    await home(res, session, embedded);
  }

  /** The partner user of a link (`wallet:{profileId}` for an embedded one). */
  async function partnerUserOf(linkId: string): Promise<string> {
    const link = await deps.database.link.findUniqueOrThrow({ where: { id: linkId }, select: { partnerUserId: true } });
    return link.partnerUserId;
  }

  /** What the money page shows: available, what a withdrawal may be now (and why not), recent activity. */
  async function moneyOf(linkId: string): Promise<{ activity: AppActivity; withdraw: HomePage['withdraw'] }> {
    const partnerUserId = await partnerUserOf(linkId);
    const account = await deps.ledger.account(deps.database, userAccount(partnerUserId));
    const available = toThousandths(account.available.value) ?? 0n;
    const fundings = await deps.database.funding.findMany({
      where: { OR: [{ sourcePartnerUserId: partnerUserId }, { linkId }] },
      orderBy: { createdAt: 'desc' },
      take: 8,
      select: { id: true, status: true, amount: true, currency: true, createdAt: true },
    });
    const payments = await deps.database.payment.findMany({
      where: { linkId },
      orderBy: { createdAt: 'desc' },
      take: 8,
      select: { id: true, status: true, amount: true, currency: true, purpose: true, createdAt: true },
    });
    const items: AppActivity['items'] = [
      ...fundings.map((f) => ({ kind: 'withdrawal' as const, id: f.id, status: f.status, final: isFinalFundingStatus(f.status), amount: amountOf(f).value, at: f.createdAt.toISOString() })),
      ...payments.map((p) => ({
        kind: p.purpose === 'DEPOSIT' ? ('deposit' as const) : ('payment' as const),
        id: p.id,
        status: p.status,
        final: isFinalPaymentStatus(p.status),
        amount: amountOf(p).value,
        at: p.createdAt.toISOString(),
      })),
    ]
      .sort((a, b) => (a.at < b.at ? 1 : -1))
      .slice(0, 8);
    // Never offer what would be refused: the most is what is available and what the limits leave.
    let most = available;
    let blocked: string | null = null;
    if (deps.limits) {
      const left = await userHeadroom(deps.database, deps.limits, partnerUserId);
      if (deps.limits.max < most) most = deps.limits.max;
      if (left.dailyAmountLeft < most) most = left.dailyAmountLeft;
      if (left.dailyCountLeft < 1) blocked = 'You have reached today’s number of withdrawals. You can withdraw again tomorrow.';
      else if (left.perMinuteLeft < 1) blocked = 'You have made several withdrawals just now. Please wait a minute before the next one.';
      else if (most < deps.limits.min) blocked = available < deps.limits.min ? `The smallest withdrawal is PHP ${money(deps.limits.min, 'PHP').value}.` : 'You have reached today’s withdrawal limit.';
    }
    if (most <= 0n && !blocked) blocked = 'You have no balance to withdraw yet. Deposit from your wallet first.';
    return {
      activity: { available: account.available.value, items },
      withdraw: { max: blocked ? null : fromThousandths(most, 2), min: deps.limits ? money(deps.limits.min, 'PHP').value : '0.01', blocked },
    };
  }

  async function waitForOnboarding(session: AppSessionView): Promise<AppSessionView['embeddedSession']> {
    let current = session.embeddedSession;
    const deadline = now() + onboardingWaitMs;
    while (current.status === 'PENDING' && now() < deadline) {
      await sleep(200);
      const row = await deps.database.embeddedSession.findUniqueOrThrow({
        where: { id: current.id },
        select: { id: true, status: true, errorCode: true, linkId: true, firstName: true, kycStatus: true },
      });
      current = row;
    }
    return current;
  }

  /** The session's onboarding with its active link, or null when a page was sent (loading, failed, reopen). */
  async function activeLink(res: Response, session: AppSessionView, wait: boolean): Promise<(AppSessionView['embeddedSession'] & { linkId: string }) | null> {
    // The user is here: an onboarding the dispatcher has not started yet (a backlog, a failed
    // start) starts now; one already started is left alone (one indexed read).
    if (session.embeddedSession.status === 'PENDING') await deps.onboarding.expedite(session.embeddedSession.id);
    const embedded = wait ? await waitForOnboarding(session) : session.embeddedSession;
    if (embedded.status === 'PENDING') {
      html(res, 200, loadingPage);
      return null;
    }
    if (embedded.status === 'FAILED' || !embedded.linkId) {
      const reopen = embedded.errorCode !== null && reopenFromWalletCodes.has(embedded.errorCode);
      message(res, reopen ? 401 : 503, reopen ? pages.reopen : pages.onboardingFailed);
      return null;
    }
    try {
      // Fresh tokens, or a refresh now: an expired refresh token shows here, before any form.
      await deps.vault.getAccessToken(embedded.linkId);
    } catch (error) {
      if (error instanceof VaultError) {
        message(res, 401, pages.reopen);
        return null;
      }
      // The wallet did not answer a refresh: the forms still work (their workflows retry).
      deps.logger.warn({ linkId: embedded.linkId, err: (error as Error).message }, 'token check failed; showing the page anyway');
    }
    return { ...embedded, linkId: embedded.linkId };
  }

  async function home(res: Response, session: AppSessionView, embedded: AppSessionView['embeddedSession'], status = 200, error?: HomePage['error']): Promise<void> {
    const { activity, withdraw } = embedded.linkId ? await moneyOf(embedded.linkId) : { activity: { available: '0.00', items: [] }, withdraw: { max: null, min: '0.01', blocked: null } };
    html(res, status, (nonce) =>
      homePage(nonce, {
        firstName: embedded.firstName,
        kycStatus: embedded.kycStatus,
        csrfToken: session.csrfToken,
        topUpFormKey: randomUUID(),
        payFormKey: randomUUID(),
        available: activity.available,
        withdraw,
        activity: activity.items,
        ...(error ? { error } : {}),
      }),
    );
  }

  // A HEAD (a link preview, a prefetch) must not use up the single-use id: only a GET consumes it.
  router.head('/app', (req, res, next) => {
    if (req.query.sessionId === undefined) {
      next();
      return;
    }
    securityHeaders(res);
    res.setHeader('Allow', 'GET');
    res.status(405).end();
  });

  router.get('/app', async (req, res) => {
    if (req.query.sessionId !== undefined) {
      await consumeSessionId(req, res, req.query.sessionId);
      return;
    }
    const session = await sessionOf(req);
    if (!session) {
      message(res, 401, pages.noSession);
      return;
    }
    await showHome(res, session);
  });

  router.get('/app/status', async (req, res) => {
    const session = await sessionOf(req);
    if (!session) {
      json(res, 401, { code: 'NO_SESSION', message: 'no web session' });
      return;
    }
    json(res, 200, { state: session.embeddedSession.status.toLowerCase() as Lowercase<typeof session.embeddedSession.status> });
  });

  /** The checks every form shares; null when a page was already sent. */
  async function formContext(
    req: Request,
    res: Response,
  ): Promise<{ session: AppSessionView; embedded: AppSessionView['embeddedSession']; linkId: string; formKey: string } | null> {
    const session = await sessionOf(req);
    if (!session) {
      message(res, 401, pages.noSession);
      return null;
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!csrfMatches(session, body.csrf)) {
      deps.logger.warn({ path: req.path }, 'landing form refused: CSRF token missing or wrong');
      message(res, 403, pages.csrf);
      return null;
    }
    const formKey = appFormSchema.shape.formKey.safeParse(body.formKey);
    if (!formKey.success) {
      message(res, 400, pages.csrf);
      return null;
    }
    const embedded = await activeLink(res, session, false);
    if (!embedded) return null;
    return { session, embedded, linkId: embedded.linkId, formKey: formKey.data };
  }

  function amountFrom(req: Request): { amount: Amount } | { error: string; value: string } {
    const raw = typeof (req.body as Record<string, unknown>)?.amount === 'string' ? String((req.body as Record<string, unknown>).amount).trim() : '';
    const value = raw.replace(/,/g, '');
    const parsed = amountSchema.safeParse({ currency: 'PHP', value: /^\d+\.$/.test(value) ? value.slice(0, -1) : value });
    if (!parsed.success) return { error: 'Enter an amount in pesos, such as 50 or 50.25.', value: raw.slice(0, 14) };
    return { amount: normaliseAmount(parsed.data) };
  }

  router.post('/app/top-up', readForm, async (req, res) => {
    const context = await formContext(req, res);
    if (!context) return;
    const amount = amountFrom(req);
    if ('error' in amount) {
      await home(res, context.session, context.embedded, 400, { form: 'top-up', message: amount.error, value: amount.value });
      return;
    }
    const key = `${appIdempotencyPrefix(context.session)}top-up:${context.formKey}`;
    // A withdrawal: the user's partner balance to their own wallet (section 10).
    const partnerUserId = await partnerUserOf(context.linkId);
    const result = await deps.fundings.start(key, {
      recipient: { type: 'TOKEN', linkId: context.linkId },
      amount: amount.amount,
      source: { type: 'USER_BALANCE', partnerUserId },
    });
    switch (result.kind) {
      case 'refused':
        // Refused before anything was stored: said in words at the form, with what is left.
        await home(res, context.session, context.embedded, 422, { form: 'top-up', message: refusalInWords(result.code, result.detail), value: amount.amount.value });
        return;
      case 'created':
      case 'existing':
        securityHeaders(res);
        res.redirect(303, `/app/top-ups/${result.funding.fundingId}`);
        return;
      case 'key-reused':
        message(res, 409, pages.formReused);
        return;
      // source-not-recipient: never for the user's own link and balance; were the link moved
      // meanwhile, the user opens the app again.
      case 'link-not-found':
      case 'source-not-recipient':
        message(res, 401, pages.reopen);
        return;
    }
  });

  router.post('/app/pay', readForm, async (req, res) => {
    const context = await formContext(req, res);
    if (!context) return;
    const amount = amountFrom(req);
    if ('error' in amount) {
      await home(res, context.session, context.embedded, 400, { form: 'pay', message: amount.error, value: amount.value });
      return;
    }
    const key = `${appIdempotencyPrefix(context.session)}pay:${context.formKey}`;
    // A deposit: the user pays in from the wallet; on SUCCEEDED it credits their partner balance.
    const result = await deps.payments.start(key, { linkId: context.linkId, amount: amount.amount, purpose: 'DEPOSIT' });
    switch (result.kind) {
      case 'created':
      case 'existing':
        securityHeaders(res);
        res.redirect(303, `/app/payments/${result.payment.id}`);
        return;
      case 'key-reused':
        message(res, 409, pages.formReused);
        return;
      case 'link-not-found':
        message(res, 401, pages.reopen);
        return;
    }
  });

  router.get('/app/activity', async (req, res) => {
    const session = await sessionOf(req);
    if (!session) {
      json(res, 401, { code: 'NO_SESSION', message: 'no web session' });
      return;
    }
    const linkId = session.embeddedSession.linkId;
    if (!linkId) {
      json(res, 200, { available: '0.00', items: [] });
      return;
    }
    json(res, 200, (await moneyOf(linkId)).activity);
  });

  /** This web session's funding or payment (by the idempotency key prefix), as an outcome. */
  async function ownOutcome(req: Request, kind: 'top-up' | 'payment'): Promise<{ session: AppSessionView | null; outcome: OutcomeStatus | null }> {
    const session = await sessionOf(req);
    const id = progressIdSchema.safeParse(req.params.id);
    if (!session || !id.success) return { session, outcome: null };
    const where = { id: id.data, idempotencyKey: { startsWith: appIdempotencyPrefix(session) } };
    const select = { status: true, errorCode: true, amount: true, currency: true } as const;
    if (kind === 'top-up') {
      const funding = await deps.database.funding.findFirst({ where, select });
      if (!funding) return { session, outcome: null };
      return { session, outcome: { status: funding.status, ...topUpOutcome(funding.status, funding.errorCode, amountOf(funding).value) } };
    }
    const payment = await deps.database.payment.findFirst({ where, select });
    if (!payment) return { session, outcome: null };
    return { session, outcome: { status: payment.status, ...paymentOutcome(payment.status, payment.errorCode, amountOf(payment).value) } };
  }

  for (const [kind, path] of [
    ['top-up', '/app/top-ups'],
    ['payment', '/app/payments'],
  ] as const) {
    router.get(`${path}/:id`, async (req, res) => {
      const { session, outcome } = await ownOutcome(req, kind);
      if (!session) {
        message(res, 401, pages.noSession);
        return;
      }
      if (!outcome) {
        message(res, 404, pages.notFound);
        return;
      }
      html(res, 200, (nonce) => progressPage(nonce, { statusUrl: `${path}/${String(req.params.id)}/status`, outcome }));
    });

    router.get(`${path}/:id/status`, async (req, res) => {
      const { session, outcome } = await ownOutcome(req, kind);
      if (!session) {
        json(res, 401, { code: 'NO_SESSION', message: 'no web session' });
        return;
      }
      if (!outcome) {
        json(res, 404, { code: 'NOT_FOUND', message: `no such ${kind} in this session` });
        return;
      }
      json(res, 200, outcome);
    });
  }

  // Under /app a page (or the status polls' JSON), never a problem document: unknown paths and
  // methods, unreadable forms (the client's fault: its 4xx) and failures (500, logged).
  const answer = (req: Request, res: Response, status: number, content: MessagePage, code: string, text: string) => {
    if (req.path.endsWith('/status')) json(res, status, { code, message: text });
    else message(res, status, content);
  };
  router.use('/app', (req, res) => answer(req, res, 404, pages.notFound, 'NOT_FOUND', `no route for ${req.method} ${req.baseUrl}${req.path}`));
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const refused = clientErrorOf(error);
    if (refused) {
      answer(req, res, refused.status, refused.status === 413 ? pages.formTooLarge : pages.unreadable, refused.code, refused.message);
      return;
    }
    // Too many requests at once (issue 25): nothing was stored; the user is told to try again.
    const busy = overloadOf(error);
    if (busy) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      answer(req, res, 503, pages.busy, 'OVERLOADED', 'too many requests at once: nothing was done; try again in a few seconds');
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'landing page failed');
    answer(req, res, 500, pages.broken, 'INTERNAL', 'something went wrong; try again');
  };
  router.use('/app', onError);
  return router;
}
