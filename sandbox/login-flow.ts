// GET /connect/authorize and its form steps: login (password, then one-time password) or
// registration of a KYC0 account, ending in a redirect with a single-use authorization code.
import { randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { opaqueToken } from './compact-tokens.ts';
import type { SandboxContext } from './context.ts';
import { lifetimes } from './lifetimes.ts';
import { credentialsPage, errorPage, maskMobile, otpPage, sandboxOtp } from './login-pages.ts';
import type { PendingLogin } from './state.ts';
import { createUser, createUserSchema, findUserByMobile, mobileSchema } from './users.ts';

const maxFailures = 3;

function queryText(req: Request, name: string): string | undefined {
  const value = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

function bodyText(req: Request, name: string): string {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const value = body[name];
  return typeof value === 'string' ? value : '';
}

/** Back to the partner: the code (or error) and the state exactly as it was sent. */
function redirectToPartner(res: Response, login: PendingLogin, params: Record<string, string>): void {
  const target = new URL(login.redirectUri);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  if (login.state !== undefined) target.searchParams.set('state', login.state);
  res.redirect(302, target.toString());
}

function showError(res: Response, status: number, title: string, message: string): void {
  res.status(status).type('html').send(errorPage(title, message));
}

export function loginFlowRouter(context: SandboxContext): Router {
  const router = Router();
  const { state, clock, registration } = context;

  const pendingLogin = (req: Request): PendingLogin | undefined => {
    const login = state.pendingLogins.get(bodyText(req, 'login_id'));
    if (login && login.expiresAt <= clock.now()) {
      state.pendingLogins.delete(login.loginId);
      return undefined;
    }
    return login;
  };

  const finish = (res: Response, login: PendingLogin, params: Record<string, string>): void => {
    state.pendingLogins.delete(login.loginId);
    redirectToPartner(res, login, params);
  };

  const renderCredentials = (req: Request, res: Response, login: PendingLogin, error: string | null): void => {
    res
      .status(200)
      .type('html')
      .send(
        credentialsPage({
          action: `${req.baseUrl}/authorize/credentials`,
          loginId: login.loginId,
          mode: login.mode,
          mobile: login.fixedMobile ?? login.mobile,
          mobileFixed: login.fixedMobile !== null,
          error,
        }),
      );
  };

  const renderOtp = (req: Request, res: Response, login: PendingLogin, mobile: string, error: string | null): void => {
    res
      .status(200)
      .type('html')
      .send(otpPage({ action: `${req.baseUrl}/authorize/otp`, loginId: login.loginId, mobile, error }));
  };

  router.get('/authorize', (req, res) => {
    // A bad client or redirect URI gets a page, never a redirect (RFC 6749 section 4.1.2.1):
    // redirecting to an unregistered URI would make the sandbox an open redirector.
    if (queryText(req, 'client_id') !== registration.clientId) {
      return showError(res, 400, 'Unknown application', 'The client_id of this request is not registered.');
    }
    if (queryText(req, 'redirect_uri') !== registration.redirectUri) {
      return showError(
        res,
        400,
        'Invalid redirect URI',
        'The redirect_uri does not match the URI registered for this client.',
      );
    }
    const base: PendingLogin = {
      loginId: randomUUID(),
      redirectUri: registration.redirectUri,
      state: queryText(req, 'state'),
      fixedMobile: null,
      mobile: null,
      mode: 'login',
      step: 'credentials',
      newPassword: null,
      passwordFailures: 0,
      otpFailures: 0,
      expiresAt: clock.now() + lifetimes.pendingLogin * 1000,
    };
    if (queryText(req, 'response_type') !== 'code') {
      return redirectToPartner(res, base, {
        error: 'unsupported_response_type',
        error_description: 'response_type must be code',
      });
    }
    if (queryText(req, 'prompt') !== 'login') {
      return redirectToPartner(res, base, { error: 'invalid_request', error_description: 'prompt must be login' });
    }
    const userId = queryText(req, 'user_id');
    if (userId !== undefined && userId !== '') {
      if (!mobileSchema.safeParse(userId).success) {
        return redirectToPartner(res, base, {
          error: 'invalid_request',
          error_description: 'user_id must be a mobile number',
        });
      }
      base.fixedMobile = userId;
      base.mobile = userId;
      base.mode = findUserByMobile(context, userId) ? 'login' : 'register';
    }
    state.pendingLogins.set(base.loginId, base);
    renderCredentials(req, res, base, null);
  });

  router.post('/authorize/credentials', (req, res) => {
    const login = pendingLogin(req);
    if (!login || login.step !== 'credentials') {
      return showError(
        res,
        400,
        'Login expired',
        'This login has expired or was already completed. Start again from the partner app.',
      );
    }
    if (bodyText(req, 'action') === 'cancel')
      return finish(res, login, { error: 'access_denied', error_description: 'the user cancelled' });
    const password = bodyText(req, 'password');
    const mobile = login.fixedMobile ?? bodyText(req, 'mobile').trim();
    login.mobile = mobile;
    if (login.mode === 'register') {
      if (password.length < 6) return renderCredentials(req, res, login, 'Choose a password of at least 6 characters.');
      if (findUserByMobile(context, mobile))
        return renderCredentials(req, res, login, 'An account with this mobile number exists already.');
      login.newPassword = password;
      login.step = 'otp';
      return renderOtp(req, res, login, mobile, null);
    }
    const user = findUserByMobile(context, mobile);
    if (!user) {
      if (login.fixedMobile !== null)
        return finish(res, login, { error: 'login_required', error_description: 'the account no longer exists' });
      return renderCredentials(req, res, login, 'No wallet account uses this mobile number.');
    }
    if (password !== user.password) {
      login.passwordFailures += 1;
      if (login.passwordFailures >= maxFailures) {
        return finish(res, login, { error: 'login_required', error_description: 'too many wrong passwords' });
      }
      const left = maxFailures - login.passwordFailures;
      return renderCredentials(req, res, login, `Wrong password. ${left} attempt${left === 1 ? '' : 's'} left.`);
    }
    login.step = 'otp';
    renderOtp(req, res, login, mobile, null);
  });

  router.post('/authorize/otp', (req, res) => {
    const login = pendingLogin(req);
    if (!login || login.step !== 'otp' || login.mobile === null) {
      return showError(
        res,
        400,
        'Login expired',
        'This login has expired or was already completed. Start again from the partner app.',
      );
    }
    if (bodyText(req, 'action') === 'cancel')
      return finish(res, login, { error: 'access_denied', error_description: 'the user cancelled' });
    if (bodyText(req, 'otp').trim() !== sandboxOtp) {
      login.otpFailures += 1;
      if (login.otpFailures >= maxFailures) {
        return finish(res, login, { error: 'login_required', error_description: 'too many wrong one-time passwords' });
      }
      const left = maxFailures - login.otpFailures;
      return renderOtp(
        req,
        res,
        login,
        login.mobile,
        `Wrong one-time password. ${left} attempt${left === 1 ? '' : 's'} left.`,
      );
    }
    let user = findUserByMobile(context, login.mobile);
    if (login.mode === 'register') {
      if (user)
        return finish(res, login, { error: 'login_required', error_description: 'the account was created meanwhile' });
      user = createUser(
        context,
        createUserSchema.parse({ mobile: login.mobile, password: login.newPassword ?? '', kycLevel: 'KYC0' }),
      );
    }
    if (!user)
      return finish(res, login, { error: 'login_required', error_description: 'the account no longer exists' });
    const code = opaqueToken(24);
    state.authorizationCodes.set(code, {
      userId: user.userId,
      redirectUri: login.redirectUri,
      expiresAt: clock.now() + lifetimes.authorizationCode * 1000,
      used: false,
      issued: null,
    });
    finish(res, login, { code, userId: maskMobile(user.mobile), profileId: user.profileId });
  });

  return router;
}
