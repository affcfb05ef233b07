// The money page's forms (application/x-www-form-urlencoded, at most 4 KiB and 10 fields): POST
// /app/withdraw withdraws from the user's partner balance to their own wallet (a funding), POST
// /app/deposit deposits from the wallet into it (a payment). Both are CSRF-protected (the synchronizer
// token of the page that showed the form) and their idempotency key is bound to the form instance,
// so a resent form starts nothing new; a started one answers 303 to its progress page. One stored
// whose workflow Temporal could not start just now goes to its progress page too (it shows the
// withdrawal or deposit waiting; the sweep starts it, as a resend of the same form would): the
// user is never asked to send again what is already stored, which a fresh form would make twice.
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { walletUserActorName } from '../../domain/actor.ts';
import { amountSchema, normaliseAmount, type Amount } from '../../domain/money.ts';
import { rateLimitedPageAnswer } from '../http/rate-limit.ts';
import { routesOn } from '../http/route-registration.ts';
import {
  defineRoute,
  htmlAnswer,
  named,
  redirectAnswer,
  type AnswerSpec,
  type AnyRouteSpec,
} from '../http/route-spec.ts';
import type { LandingContext } from './landing-context.ts';
import { messagePages } from './landing-messages.ts';
import { securityHeaders, sendMessage } from './landing-responses.ts';
import type { MoneyPage } from './money-page.ts';
import { appIdempotencyPrefix, csrfMatches, type AppSessionView } from './web-sessions.ts';

/**
 * The withdraw and deposit forms (application/x-www-form-urlencoded). Each field is checked on its own:
 * a missing or wrong CSRF token is 403 (csrfMatches), a bad form key 400, an amount the page
 * cannot read shows the page again with a message (amountFrom).
 */
export const appFormSchema = z.object({
  /** The synchronizer token of the page that showed the form. */
  csrf: z.string().min(1).max(128),
  /** Chosen by the page per form instance: it is the form's idempotency key (a resend starts nothing new). */
  formKey: z.uuid(),
  /** Pesos as typed: "50", "50.25", "1,000.50". */
  amount: z.string(),
});

const appForm = named('AppForm', appFormSchema);

const formResponses = (progressPath: string): Record<`${number}`, AnswerSpec> => ({
  '200': htmlAnswer('onboarding is still running: the loading page'),
  '303': redirectAnswer(
    `started (or already started by this form; or stored, its start left to the sweep, when Temporal cannot take it just now): to its progress page, ${progressPath}`,
  ),
  '400': htmlAnswer('the page again with a message about the amount, or a malformed form key'),
  '401': htmlAnswer(
    'no web session, the wallet no longer accepts the user’s tokens, or onboarding gave up (reopen from the wallet)',
  ),
  '403': htmlAnswer('the CSRF token is missing or not this session’s'),
  '409': htmlAnswer('this form was already sent with another amount'),
  '422': htmlAnswer(
    'the page again with the refusal in words at the form: not enough balance or a limit (nothing stored)',
  ),
  '413': htmlAnswer('the form is too large'),
  '415': htmlAnswer('a charset or Content-Encoding that is not supported'),
  '429': rateLimitedPageAnswer,
  '500': htmlAnswer('an unexpected failure (logged)'),
  '503': htmlAnswer(
    'too many requests at once, or Temporal cannot take a call just now (with Retry-After): try again in a moment',
  ),
});

const formRoute = (
  path: '/app/withdraw' | '/app/deposit',
  operationId: string,
  summary: string,
  action: string,
  progressPath: string,
) =>
  defineRoute({
    method: 'post',
    path,
    operationId,
    tag: 'landing',
    summary,
    access: { webSession: 'required' },
    body: {
      mediaType: 'application/x-www-form-urlencoded',
      schema: appForm,
      description: `the ${action} form of the landing page (at most 4 KiB and 10 fields)`,
    },
    responses: formResponses(progressPath),
  });

const routes = {
  appWithdraw: formRoute(
    '/app/withdraw',
    'appWithdraw',
    'Withdraw from the user’s partner balance to their wallet (a funding to the session’s link)',
    'withdraw',
    '/app/withdrawals/{id}',
  ),
  appDeposit: formRoute(
    '/app/deposit',
    'appDeposit',
    'Deposit from the user’s wallet into their partner balance (a payment)',
    'deposit',
    '/app/deposits/{id}',
  ),
};

/** The forms' routes, as the document lists them. */
export const moneyFormRoutes: readonly AnyRouteSpec[] = Object.values(routes);

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
      return left
        ? `This is more than today’s withdrawal limit allows: ${left[1]} left today.`
        : 'You have reached today’s number of withdrawals. You can withdraw again tomorrow.';
    case 'VELOCITY_LIMIT_EXCEEDED':
      return 'You have made several withdrawals just now. Please wait a minute and try again.';
    case 'CURRENCY_NOT_ACCEPTED':
      return 'Withdrawals are in PHP only.';
    default:
      return 'This withdrawal cannot be made right now.';
  }
}

export function addMoneyFormRoutes(router: Router, { deps, sessionOf }: LandingContext, page: MoneyPage): void {
  const add = routesOn(router);
  const readForm = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });

  /** The checks every form shares; null when a page was already sent. */
  async function formContext(
    req: Request,
    res: Response,
  ): Promise<{
    session: AppSessionView;
    embedded: AppSessionView['embeddedSession'];
    linkId: string;
    formKey: string;
  } | null> {
    const session = await sessionOf(req);
    if (!session) {
      sendMessage(res, 401, messagePages.noSession);
      return null;
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!csrfMatches(session, body.csrf)) {
      deps.logger.warn({ path: req.path }, 'landing form refused: CSRF token missing or wrong');
      sendMessage(res, 403, messagePages.csrf);
      return null;
    }
    const formKey = appFormSchema.shape.formKey.safeParse(body.formKey);
    if (!formKey.success) {
      sendMessage(res, 400, messagePages.csrf);
      return null;
    }
    const embedded = await page.activeLink(res, session, false);
    if (!embedded) return null;
    return { session, embedded, linkId: embedded.linkId, formKey: formKey.data };
  }

  function amountFrom(req: Request): { amount: Amount } | { error: string; value: string } {
    const raw =
      typeof (req.body as Record<string, unknown>)?.amount === 'string'
        ? String((req.body as Record<string, unknown>).amount).trim()
        : '';
    // No comma, as the form's own pattern: a decimal comma (1,50, 1,500) is refused, never read as 150 or 1500.
    const value = raw;
    const parsed = amountSchema.safeParse({
      currency: 'PHP',
      value: /^\d+\.$/.test(value) ? value.slice(0, -1) : value,
    });
    if (!parsed.success) return { error: 'Enter an amount in pesos, such as 50 or 50.25.', value: raw.slice(0, 14) };
    return { amount: normaliseAmount(parsed.data) };
  }

  add(routes.appWithdraw, readForm, async (req, res) => {
    const context = await formContext(req, res);
    if (!context) return;
    const amount = amountFrom(req);
    if ('error' in amount) {
      await page.home(res, context.session, context.embedded, 400, {
        form: 'withdraw',
        message: amount.error,
        value: amount.value,
      });
      return;
    }
    // The stored key keeps its first spelling: a form resent across a deploy must find its funding.
    const key = `${appIdempotencyPrefix(context.session)}top-up:${context.formKey}`;
    // A withdrawal: the user's partner balance to their own wallet (section 10).
    const partnerUserId = await page.partnerUserOf(context.linkId);
    const result = await deps.fundings.start(
      key,
      {
        recipient: { type: 'TOKEN', linkId: context.linkId },
        amount: amount.amount,
        source: { type: 'USER_BALANCE', partnerUserId },
      },
      // On whose authority: the user, in the session they opened the page with.
      walletUserActorName(partnerUserId, context.embedded.requestReferenceNo),
    );
    switch (result.kind) {
      case 'refused':
        // Refused before anything was stored: said in words at the form, with what is left.
        await page.home(res, context.session, context.embedded, 422, {
          form: 'withdraw',
          message: refusalInWords(result.code, result.detail),
          value: amount.amount.value,
        });
        return;
      case 'created':
      case 'existing':
      case 'not-started':
        securityHeaders(res);
        res.redirect(303, `/app/withdrawals/${result.funding.fundingId}`);
        return;
      case 'key-reused':
        sendMessage(res, 409, messagePages.formReused);
        return;
      // source-not-recipient: never for the user's own link and balance; were the link moved
      // meanwhile, the user opens the app again.
      case 'link-not-found':
      case 'source-not-recipient':
        sendMessage(res, 401, messagePages.reopen);
        return;
    }
  });

  add(routes.appDeposit, readForm, async (req, res) => {
    const context = await formContext(req, res);
    if (!context) return;
    const amount = amountFrom(req);
    if ('error' in amount) {
      await page.home(res, context.session, context.embedded, 400, {
        form: 'deposit',
        message: amount.error,
        value: amount.value,
      });
      return;
    }
    const key = `${appIdempotencyPrefix(context.session)}pay:${context.formKey}`;
    // A deposit: the user pays in from the wallet; on SUCCEEDED it credits their partner balance.
    const result = await deps.payments.start(
      key,
      { linkId: context.linkId, amount: amount.amount, purpose: 'DEPOSIT' },
      walletUserActorName(await page.partnerUserOf(context.linkId), context.embedded.requestReferenceNo),
    );
    switch (result.kind) {
      case 'created':
      case 'existing':
      case 'not-started':
        securityHeaders(res);
        res.redirect(303, `/app/deposits/${result.payment.id}`);
        return;
      case 'key-reused':
        sendMessage(res, 409, messagePages.formReused);
        return;
      case 'link-not-found':
        sendMessage(res, 401, messagePages.reopen);
        return;
      case 'refused':
        // The page writes PHP amounts only: never for this form, said in words were it to happen.
        await page.home(res, context.session, context.embedded, 422, {
          form: 'deposit',
          message: 'Deposits are in PHP only.',
          value: amount.amount.value,
        });
        return;
    }
  });
}
