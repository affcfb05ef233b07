// The money page of a web session: the user's available balance, how much a withdrawal may be
// right now (never more than the balance and section 10's limits leave, and why not when nothing
// may be withdrawn), recent withdrawals, deposits and payments, and the withdraw and deposit
// forms. Before it, the gate every page of a session passes: onboarding finished (the entry waits
// briefly for it, then shows the self-refreshing loading page), the link active and its tokens
// accepted by the wallet (else a page that says to reopen the app from the wallet).
import { randomUUID } from 'node:crypto';
import type { Response } from 'express';
import { reopenFromWalletCodes } from '../../domain/embedded-session.ts';
import { VaultError } from '../../links/token-vault.ts';
import { amountOf } from '../../fundings/funding-view.ts';
import { userAccount } from '../../domain/ledger.ts';
import { formatAmount, thousandthsIn } from '../../domain/money.ts';
import { isFinalFundingStatus, type FundingStatus } from '../../domain/funding.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Database } from '../../lib/database.ts';
import { isFinalPaymentStatus } from '../../domain/payment.ts';
import { headroomOf } from '../../ledger/limits.ts';
import { userUsage } from '../../fundings/funding-usage.ts';
import { clientGone } from '../http/client-gone.ts';
import { homePage, loadingPage, type HomePage } from './landing-pages.ts';
import type { LandingContext } from './landing-context.ts';
import type { AppActivity } from './landing-json.ts';
import { messagePages } from './landing-messages.ts';
import { sendMessage, sendPage } from './landing-responses.ts';
import { embeddedSessionShown, type AppSessionView } from './web-sessions.ts';

type EmbeddedSession = AppSessionView['embeddedSession'];

export interface MoneyPage {
  /** The partner user of a link (`wallet:{profileId}` for an embedded one). */
  partnerUserOf(linkId: string): Promise<string>;
  /** What the money page shows: available, what a withdrawal may be now (and why not), recent activity. */
  moneyOf(linkId: string): Promise<{ activity: AppActivity; withdraw: HomePage['withdraw'] }>;
  /** The session's onboarding with its active link, or null when a page was sent (loading, failed, reopen). */
  activeLink(
    res: Response,
    session: AppSessionView,
    wait: boolean,
  ): Promise<(EmbeddedSession & { linkId: string }) | null>;
  /** The money page; with an error, again after a form (its status and the message at the form). */
  home(
    res: Response,
    session: AppSessionView,
    embedded: EmbeddedSession,
    status?: number,
    error?: HomePage['error'],
  ): Promise<void>;
  /** The partner page of a web session: the home page, or the loading, reopen or failure page. */
  showHome(res: Response, session: AppSessionView): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createMoneyPage({ deps, now }: LandingContext): MoneyPage {
  const onboardingWaitMs = deps.onboardingWaitMs ?? 5000;

  async function partnerUserOf(linkId: string): Promise<string> {
    const link = await deps.database.link.findUniqueOrThrow({ where: { id: linkId }, select: { partnerUserId: true } });
    return link.partnerUserId;
  }

  async function moneyOf(linkId: string): Promise<{ activity: AppActivity; withdraw: HomePage['withdraw'] }> {
    const partnerUserId = await partnerUserOf(linkId);
    const account = await deps.ledger.account(deps.database, userAccount(partnerUserId));
    const available = thousandthsIn(account.available.value);
    const fundings = await latestFundingsOf(deps.database, { partnerUserId, linkId }, 8);
    const payments = await latestPaymentsOf(deps.database, linkId, 8);
    const items: AppActivity['items'] = [
      ...fundings.map((f) => ({
        kind: 'withdrawal' as const,
        id: f.id,
        status: f.status,
        final: isFinalFundingStatus(f.status),
        amount: amountOf(f).value,
        at: f.createdAt.toISOString(),
      })),
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
      const left = headroomOf(deps.limits, await userUsage(deps.database, partnerUserId, deps.limits.timeZone));
      if (deps.limits.max < most) most = deps.limits.max;
      if (left.dailyAmountLeft < most) most = left.dailyAmountLeft;
      if (left.dailyCountLeft < 1)
        blocked = 'You have reached today’s number of withdrawals. You can withdraw again tomorrow.';
      else if (left.perMinuteLeft < 1)
        blocked = 'You have made several withdrawals just now. Please wait a minute before the next one.';
      else if (most < deps.limits.min)
        blocked =
          available < deps.limits.min
            ? `The smallest withdrawal is PHP ${formatAmount(deps.limits.min, 'PHP')}.`
            : 'You have reached today’s withdrawal limit.';
    }
    if (most <= 0n && !blocked) blocked = 'You have no balance to withdraw yet. Deposit from your wallet first.';
    return {
      activity: { available: account.available.value, items },
      withdraw: {
        max: blocked ? null : formatAmount(most, 'PHP'),
        min: deps.limits ? formatAmount(deps.limits.min, 'PHP') : '0.01',
        blocked,
      },
    };
  }

  /** The session once its onboarding is done, or as it stands after the wait or once its user has gone. */
  async function waitForOnboarding(session: AppSessionView, gone: AbortSignal): Promise<EmbeddedSession> {
    let current = session.embeddedSession;
    const deadline = now() + onboardingWaitMs;
    while (current.status === 'PENDING' && now() < deadline && !gone.aborted) {
      await sleep(200);
      const row = await deps.database.embeddedSession.findUniqueOrThrow({
        where: { id: current.id },
        select: embeddedSessionShown,
      });
      current = row;
    }
    return current;
  }

  async function activeLink(
    res: Response,
    session: AppSessionView,
    wait: boolean,
  ): Promise<(EmbeddedSession & { linkId: string }) | null> {
    // The user is here: an onboarding the dispatcher has not started yet (a backlog, a failed
    // start) starts now; one already started is left alone (one indexed read).
    if (session.embeddedSession.status === 'PENDING') await deps.onboarding.expedite(session.embeddedSession.id);
    const embedded = wait ? await waitForOnboarding(session, clientGone(res)) : session.embeddedSession;
    if (embedded.status === 'PENDING') {
      sendPage(res, 200, loadingPage);
      return null;
    }
    if (embedded.status === 'FAILED' || !embedded.linkId) {
      // Either way only a fresh session from the wallet can go on (a failed onboarding kept no token to try again
      // with): 401, never a 503 that asks to come back to this one.
      const reopen = embedded.errorCode !== null && reopenFromWalletCodes.has(embedded.errorCode);
      sendMessage(res, 401, reopen ? messagePages.reopen : messagePages.onboardingFailed);
      return null;
    }
    try {
      // Fresh tokens, or a refresh now: an expired refresh token shows here, before any form.
      await deps.vault.getAccessToken(embedded.linkId);
    } catch (error) {
      if (error instanceof VaultError) {
        sendMessage(res, 401, messagePages.reopen);
        return null;
      }
      // The wallet did not answer a refresh: the forms still work (their workflows retry).
      deps.logger.warn(
        { linkId: embedded.linkId, err: (error as Error).message },
        'token check failed; showing the page anyway',
      );
    }
    return { ...embedded, linkId: embedded.linkId };
  }

  async function home(
    res: Response,
    session: AppSessionView,
    embedded: EmbeddedSession,
    status = 200,
    error?: HomePage['error'],
  ): Promise<void> {
    const { activity, withdraw } = embedded.linkId
      ? await moneyOf(embedded.linkId)
      : { activity: { available: '0.00', items: [] }, withdraw: { max: null, min: '0.01', blocked: null } };
    sendPage(res, status, (nonce) =>
      homePage(nonce, {
        firstName: embedded.firstName,
        kycStatus: embedded.kycStatus,
        csrfToken: session.csrfToken,
        withdrawFormKey: randomUUID(),
        payFormKey: randomUUID(),
        available: activity.available,
        withdraw,
        activity: activity.items,
        ...(error ? { error } : {}),
      }),
    );
  }

  async function showHome(res: Response, session: AppSessionView): Promise<void> {
    const embedded = await activeLink(res, session, true);
    if (!embedded) return;
    await home(res, session, embedded);
  }

  return { partnerUserOf, moneyOf, activeLink, home, showHome };
}

/**
 * A linked user's latest `take` fundings, newest first: those drawn on their partner balance and those paid to their
 * wallet, each read from its own index in time order (the partial (source_partner_user_id, created_at) and
 * (link_id, created_at)) and merged. One query with OR could use neither for its order, and walked every funding back
 * by time for a user with few (the page and its 2 s polls while a withdrawal is under way).
 */
export async function latestFundingsOf(
  database: Database,
  user: { partnerUserId: string; linkId: string },
  take: number,
): Promise<Array<{ id: string; status: FundingStatus; amount: Prisma.Decimal; currency: string; createdAt: Date }>> {
  const select = { id: true, status: true, amount: true, currency: true, createdAt: true } as const;
  const [drawn, paid] = await Promise.all([
    database.funding.findMany({
      where: { sourcePartnerUserId: user.partnerUserId },
      orderBy: { createdAt: 'desc' },
      take,
      select,
    }),
    database.funding.findMany({ where: { linkId: user.linkId }, orderBy: { createdAt: 'desc' }, take, select }),
  ]);
  const byId = new Map([...drawn, ...paid].map((funding) => [funding.id, funding]));
  return [...byId.values()].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).slice(0, take);
}

/** A linked user's latest `take` payments, newest first, from the (link_id, created_at) index. */
export function latestPaymentsOf(database: Database, linkId: string, take: number) {
  return database.payment.findMany({
    where: { linkId },
    orderBy: { createdAt: 'desc' },
    take,
    select: { id: true, status: true, amount: true, currency: true, purpose: true, createdAt: true },
  });
}
