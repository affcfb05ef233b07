// The sandbox's own pages: an index for testers and the wallet-app launcher that opens the
// partner's tile for a chosen test user (session URL call, then redirect to the landing page) and,
// when its settings say where, shows each user's partner balance (partner-balances.ts).
import express, { Router } from 'express';
import type { Agent } from 'undici';
import type { SandboxContext } from './context.ts';
import { requestBaseUrl } from './documents.ts';
import { escapeHtml } from '../lib/html.ts';
import { page } from './html.ts';
import { launchPartnerSession } from './launch.ts';
import { readPartnerBalances, type PartnerBalance } from './partner-balances.ts';
import { sandboxOtp } from './login-pages.ts';
import { defaultPassword } from './users.ts';

export function pagesRouter(context: SandboxContext, senderAgent: Agent): Router {
  const router = Router();
  const { registration, state } = context;

  router.get('/', (req, res) => {
    const base = requestBaseUrl(req);
    const authorize = new URL(`${base}/connect/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: registration.clientId,
      redirect_uri: registration.redirectUri,
      prompt: 'login',
      user_id: '09171234567',
      state: 'try-me',
    }).toString();
    res.type('html').send(
      page(
        'Wallet service sandbox',
        `<h1>Wallet service sandbox</h1>
<div class="card">
<p><a href="${escapeHtml(`${base}/_sandbox/launcher`)}" id="launcher-link">Wallet-app launcher</a>: open the partner's tile as a test user.</p>
<p><a href="${escapeHtml(authorize.toString())}" id="login-link">Login page</a> (standalone authorization for mobile 09171234567).</p>
</div>
<div class="card">
<p>Every sandbox user's one-time password is <code>${sandboxOtp}</code>; users created without a password have <code>${escapeHtml(defaultPassword)}</code>.</p>
<p>Base URLs: connect <code>${escapeHtml(`${base}/connect`)}</code>, op <code>${escapeHtml(`${base}/op`)}</code>, transfers <code>${escapeHtml(`${base}/v1`)}</code>.</p>
<p>The partner registration is at <a href="${escapeHtml(`${base}/_sandbox/partner`)}">/_sandbox/partner</a>; the admin API (users, cash-in codes, tokens, launch, ledger, clock, faults, settings, reset) is under <code>/_sandbox</code>.</p>
</div>`,
      ),
    );
  });

  const partnerBalanceText = (balance: PartnerBalance | undefined): string => {
    if (!balance) return '';
    if (!balance.ok)
      return `<br><small class="hint" data-partner-balance="unavailable">partner balance unavailable: ${escapeHtml(balance.reason)}</small>`;
    return `<br><small data-partner-balance="${escapeHtml(balance.value)}">partner balance ${escapeHtml(balance.currency)} ${escapeHtml(balance.value)}</small>`;
  };

  router.get('/launcher', async (_req, res, next) => {
    try {
      const users = [...state.users.values()];
      const setting = state.settings.partnerBalances;
      const balances = setting
        ? await readPartnerBalances(
            setting,
            users.map((user) => user.profileId),
          )
        : new Map<string, PartnerBalance>();
      const rows = users
        .map(
          (
            user,
          ) => `<tr><td>${escapeHtml(`${user.profile.name.firstName} ${user.profile.name.lastName}`)}<br><small>${escapeHtml(user.mobile)} · ${user.kycLevel} · PHP ${escapeHtml(user.balance)}</small>${partnerBalanceText(balances.get(user.profileId))}</td>
<td><form method="post" action="launcher/open" style="margin:0;padding:0;box-shadow:none"><input type="hidden" name="userId" value="${escapeHtml(user.userId)}">
<button class="primary" type="submit" name="open" id="open-${escapeHtml(user.userId)}">Open partner tile</button></form></td></tr>`,
        )
        .join('\n');
      res.type('html').send(
        page(
          'Wallet app launcher',
          `<h1>Wallet app</h1>
<p>Open the partner's tile as one of the test users. The sandbox starts a session at <code>${escapeHtml(registration.sessionUrl)}</code> and then opens <code>${escapeHtml(registration.landingUrl)}</code>.</p>
${rows === '' ? '<p class="hint">No test users yet: create some with <code>POST /_sandbox/users</code>.</p>' : `<div class="card"><table>${rows}</table></div>`}`,
        ),
      );
    } catch (error) {
      next(error);
    }
  });

  router.post('/launcher/open', express.urlencoded({ extended: false, limit: '4kb' }), async (req, res, next) => {
    try {
      const userId = typeof req.body?.userId === 'string' ? req.body.userId : '';
      const user = state.users.get(userId);
      if (!user) {
        res
          .status(404)
          .type('html')
          .send(page('Unknown user', '<h1>Unknown user</h1><p class="error">No test user with this id.</p>'));
        return;
      }
      const result = await launchPartnerSession(context, user, senderAgent);
      if (!result.ok) {
        const status = result.partnerStatus === null ? 'no answer' : `status ${result.partnerStatus}`;
        res
          .status(502)
          .type('html')
          .send(
            page(
              'Partner tile could not open',
              `<h1>The partner's tile could not open</h1>
<p class="error" id="error" role="alert">${escapeHtml(result.message)} (${escapeHtml(status)}).</p>
<p>Session URL: <code>${escapeHtml(registration.sessionUrl)}</code></p>
<p><a href="../launcher">Back to the launcher</a></p>`,
            ),
          );
        return;
      }
      res.redirect(302, result.landingUrl);
    } catch (error) {
      next(error);
    }
  });

  return router;
}
