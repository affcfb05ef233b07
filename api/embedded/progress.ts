// Progress, as the pages poll it: GET /app/status (the loading page: has onboarding finished?),
// GET /app/activity (the money page: the balance and its recent withdrawals, deposits and payments
// with their live states), and each withdrawal's and deposit's progress page (/app/withdrawals/{id},
// /app/deposits/{id}) with its JSON status. They answer for this web session's own fundings and
// payments only (by their idempotency key's prefix); any other id is not found.
import { idSchema } from '../../domain/ids.ts';
import type { Request, Router } from 'express';
import { amountOf } from '../../fundings/funding-view.ts';
import { rateLimitedPageAnswer } from '../http/rate-limit.ts';
import { routesOn } from '../http/route-registration.ts';
import { defineRoute, htmlAnswer, jsonAnswer, named, type AnyRouteSpec } from '../http/route-spec.ts';
import type { LandingContext } from './landing-context.ts';
import { appActivitySchema, appSessionStateSchema } from './landing-json.ts';
import { progressPage } from './landing-pages.ts';
import { messagePages } from './landing-messages.ts';
import {
  appJsonErrorComponent,
  noSessionJsonAnswer,
  busyPollAnswer,
  rateLimitedPollAnswer,
  sendJson,
  sendMessage,
  sendPage,
} from './landing-responses.ts';
import type { MoneyPage } from './money-page.ts';
import { outcomeStatusSchema, depositOutcome, withdrawalOutcome, type OutcomeStatus } from './outcome-messages.ts';
import { appIdempotencyPrefix, type AppSessionView } from './web-sessions.ts';

/** The id in a progress page's path (/app/withdrawals/{id}, /app/deposits/{id}): anything else is not found. */
export const progressIdSchema = idSchema;

const appOutcomeComponent = named('AppOutcome', outcomeStatusSchema);

/** A withdrawal's or a deposit's progress page and the JSON status it polls. */
const progressRoutesOf = (kind: 'withdraw' | 'payment', path: '/app/withdrawals' | '/app/deposits') => {
  const params = { id: { schema: progressIdSchema, description: `the ${kind}’s id` } };
  return {
    page: defineRoute({
      method: 'get',
      path: `${path}/{id}`,
      operationId: kind === 'withdraw' ? 'appWithdrawalPage' : 'appDepositPage',
      tag: 'landing',
      summary: `The progress page of one of this web session’s ${kind}s (polls its status)`,
      access: { webSession: 'required' },
      params,
      responses: {
        '200': htmlAnswer('the progress page'),
        '401': htmlAnswer('no web session'),
        '404': htmlAnswer(`no such ${kind} in this web session`),
        '429': rateLimitedPageAnswer,
      },
    }),
    status: defineRoute({
      method: 'get',
      path: `${path}/{id}/status`,
      operationId: kind === 'withdraw' ? 'appWithdrawalStatus' : 'appDepositStatus',
      tag: 'landing',
      summary: `The ${kind}’s status and what the page tells the user`,
      access: { webSession: 'required' },
      params,
      responses: {
        '200': jsonAnswer(appOutcomeComponent, 'the outcome; `final` once no further change is expected'),
        '401': noSessionJsonAnswer,
        '404': jsonAnswer(appJsonErrorComponent, `no such ${kind} in this web session (\`NOT_FOUND\`)`),
        '429': rateLimitedPollAnswer,
        '503': busyPollAnswer,
      },
    }),
  };
};

const progressKinds = [
  { kind: 'withdraw', path: '/app/withdrawals', routes: progressRoutesOf('withdraw', '/app/withdrawals') },
  { kind: 'payment', path: '/app/deposits', routes: progressRoutesOf('payment', '/app/deposits') },
] as const;

const routes = {
  appActivity: defineRoute({
    method: 'get',
    path: '/app/activity',
    operationId: 'appActivity',
    tag: 'landing',
    summary:
      'The money page’s available balance and recent withdrawals, deposits and payments with their states (polled while any is under way)',
    access: { webSession: 'required' },
    responses: {
      '200': jsonAnswer(named('AppActivity', appActivitySchema), 'the balance and recent activity'),
      '401': noSessionJsonAnswer,
      '429': rateLimitedPollAnswer,
      '503': busyPollAnswer,
    },
  }),
  appSessionState: defineRoute({
    method: 'get',
    path: '/app/status',
    operationId: 'appSessionState',
    tag: 'landing',
    summary: 'The web session’s onboarding state, for the loading page’s poll',
    access: { webSession: 'required' },
    responses: {
      '200': jsonAnswer(named('AppSessionState', appSessionStateSchema), 'the state'),
      '401': noSessionJsonAnswer,
      '429': rateLimitedPollAnswer,
      '503': busyPollAnswer,
    },
  }),
};

/** The progress routes, as the document lists them. */
export const progressRoutes: readonly AnyRouteSpec[] = [
  ...Object.values(routes),
  ...progressKinds.flatMap(({ routes }) => [routes.page, routes.status]),
];

export function addProgressRoutes(router: Router, { deps, sessionOf }: LandingContext, page: MoneyPage): void {
  const add = routesOn(router);
  add(routes.appSessionState, async (req, res) => {
    const session = await sessionOf(req);
    if (!session) {
      sendJson(res, 401, { code: 'NO_SESSION', message: 'no web session' });
      return;
    }
    sendJson(res, 200, {
      state: session.embeddedSession.status.toLowerCase() as Lowercase<typeof session.embeddedSession.status>,
    });
  });

  add(routes.appActivity, async (req, res) => {
    const session = await sessionOf(req);
    if (!session) {
      sendJson(res, 401, { code: 'NO_SESSION', message: 'no web session' });
      return;
    }
    const linkId = session.embeddedSession.linkId;
    if (!linkId) {
      sendJson(res, 200, { available: '0.00', items: [] });
      return;
    }
    sendJson(res, 200, (await page.moneyOf(linkId)).activity);
  });

  /** This web session's funding or payment (by the idempotency key prefix), as an outcome. */
  async function ownOutcome(
    req: Request,
    kind: 'withdraw' | 'payment',
  ): Promise<{ session: AppSessionView | null; outcome: OutcomeStatus | null }> {
    const session = await sessionOf(req);
    const id = progressIdSchema.safeParse(req.params.id);
    if (!session || !id.success) return { session, outcome: null };
    const where = { id: id.data, idempotencyKey: { startsWith: appIdempotencyPrefix(session) } };
    const select = { status: true, errorCode: true, amount: true, currency: true } as const;
    if (kind === 'withdraw') {
      const funding = await deps.database.funding.findFirst({ where, select });
      if (!funding) return { session, outcome: null };
      return {
        session,
        outcome: {
          status: funding.status,
          ...withdrawalOutcome(funding.status, funding.errorCode, amountOf(funding).value),
        },
      };
    }
    const payment = await deps.database.payment.findFirst({ where, select });
    if (!payment) return { session, outcome: null };
    return {
      session,
      outcome: {
        status: payment.status,
        ...depositOutcome(payment.status, payment.errorCode, amountOf(payment).value),
      },
    };
  }

  for (const { kind, path, routes } of progressKinds) {
    add(routes.page, async (req, res) => {
      const { session, outcome } = await ownOutcome(req, kind);
      if (!session) {
        sendMessage(res, 401, messagePages.noSession);
        return;
      }
      if (!outcome) {
        sendMessage(res, 404, messagePages.notFound);
        return;
      }
      sendPage(res, 200, (nonce) =>
        progressPage(nonce, { statusUrl: `${path}/${String(req.params.id)}/status`, outcome }),
      );
    });

    add(routes.status, async (req, res) => {
      const { session, outcome } = await ownOutcome(req, kind);
      if (!session) {
        sendJson(res, 401, { code: 'NO_SESSION', message: 'no web session' });
        return;
      }
      if (!outcome) {
        sendJson(res, 404, { code: 'NOT_FOUND', message: `no such ${kind} in this session` });
        return;
      }
      sendJson(res, 200, outcome);
    });
  }
}
