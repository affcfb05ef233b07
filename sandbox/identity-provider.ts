// The sandbox identity provider: a real OpenID Connect provider (panva's oidc-provider) with a few
// staff members, for the ops console's sign-in in `walletflow dev` and in the tests
// (contract-decisions section 15). Authorization code with PKCE only; a login page asks for a staff
// member's user name and password; consent is implied (the console is a first-party client). Each
// member carries a display name and the groups CONSOLE_OIDC_ROLES maps to scopes. Every ID token says
// when its login happened (auth_time), as many providers' do. It knows nothing of walletflow: its
// client, its staff and its groups are the caller's.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import { escapeHtml } from '../lib/html.ts';

export interface StaffMember {
  username: string;
  password: string;
  /** The display name the ID token's `name` carries. */
  name: string;
  groups: string[];
}

export interface IdentityProviderClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface IdentityProviderOptions {
  /** 0: a free port. */
  port?: number;
  host?: string;
  clients: IdentityProviderClient[];
  staff: readonly StaffMember[];
  /**
   * The issuer's path, for a test: an issuer such as `http://HOST:PORT/application/o/walletflow/` (a path and a trailing
   * slash, as Authentik's and Azure AD v1's issuers have), its endpoints under it. Absent: the issuer is the origin.
   */
  issuerPath?: string;
  /**
   * For a test: the groups claim only for the `groups` scope (as Dex and Okta's org server give it), not with the
   * profile; the provider lists `groups` and `email` among its scopes then.
   */
  groupsScope?: boolean;
}

export interface RunningIdentityProvider {
  /** The issuer (CONSOLE_OIDC_ISSUER): http://HOST:PORT, or with `issuerPath` after it. */
  issuer: string;
  staff: readonly StaffMember[];
  /**
   * Misbehaves, for a test: while on, a sign-in the browser's provider session can answer is answered with it, whatever
   * `prompt=login` or `max_age` ask (a provider configured to ignore them).
   */
  ignoreFreshLoginRequests(on: boolean): void;
  /**
   * For a test: the logins made from now on say they happened `seconds` from the real time (auth_time), as a provider
   * whose clock is behind (negative) or ahead says; or, set for one login, a login made that long ago.
   */
  setLoginClockOffset(seconds: number): void;
  /** For a test: while on, the token endpoint answers 503 (a provider that is down for a moment). */
  failTokenRequests(on: boolean): void;
  close(): Promise<void>;
}

/** A staff member's stable subject: their user name (a real provider's would be an opaque id). */
const subjectOf = (member: StaffMember) => `staff-${member.username}`;

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 420px; margin: 48px auto; padding: 0 16px">${body}</body></html>`;

function loginPage(uid: string, clientId: string, error?: string): string {
  return page(
    'Sign in: sandbox identity provider',
    `<main><h1>Sandbox identity provider</h1>
<p>Sign in to <strong>${escapeHtml(clientId)}</strong> as a staff member.</p>
${error ? `<p role="alert" style="color:#b3261e">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<p><label for="username">User name</label><br><input id="username" name="username" autocomplete="username" required autofocus></p>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form></main>`,
  );
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 4096) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

export async function startIdentityProvider(options: IdentityProviderOptions): Promise<RunningIdentityProvider> {
  const host = options.host ?? '127.0.0.1';
  const staffByUsername = new Map(options.staff.map((member) => [member.username, member]));
  const staffBySubject = new Map(options.staff.map((member) => [subjectOf(member), member]));
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createServer((req, res) => handle(req, res));
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  const issuer = `${origin}${options.issuerPath ?? ''}`;
  /** Where the provider's own routes are mounted: the issuer's path without its trailing slash. */
  const mountPath = (options.issuerPath ?? '').replace(/\/+$/, '');

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = {
    ...(await exportJWK(privateKey)),
    alg: 'RS256',
    use: 'sig',
    kid: randomBytes(8).toString('hex'),
  };
  const provider = new Provider(issuer, {
    clients: options.clients.map((client) => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: client.redirectUris,
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
      require_auth_time: true,
    })),
    pkce: { required: () => true },
    ...(options.groupsScope
      ? {
          scopes: ['openid', 'profile', 'email', 'groups'],
          claims: { openid: ['sub'], profile: ['name', 'preferred_username'], email: ['email'], groups: ['groups'] },
        }
      : {
          scopes: ['openid', 'profile'],
          // The groups come with the profile, as a provider configured to send them in the ID token does.
          claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'groups'] },
        }),
    // The scopes' claims in the ID token itself, as many providers put a groups claim there.
    conformIdTokenClaims: false,
    findAccount: (_ctx, id) => {
      const member = staffBySubject.get(id);
      if (!member) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          name: member.name,
          preferred_username: member.username,
          email: `${member.username}@staff.example`,
          groups: member.groups,
        }),
      };
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false } },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    jwks: { keys: [signingKey] },
    // A first-party client: what it asks for is granted, with no consent screen.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const clientId = ctx.oidc.client?.clientId;
      const accountId = ctx.oidc.session?.accountId;
      if (!clientId || !accountId) return undefined;
      const asked = typeof ctx.oidc.params?.scope === 'string' ? ctx.oidc.params.scope : 'openid profile';
      const existing = ctx.oidc.session?.grantIdFor(clientId);
      const grant =
        (existing ? await ctx.oidc.provider.Grant.find(existing) : undefined) ??
        new ctx.oidc.provider.Grant({ clientId, accountId });
      grant.addOIDCScope(asked);
      await grant.save();
      return grant;
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page(
        'Sign-in error',
        `<main><h1>Sign-in error</h1><p>${escapeHtml(String(out.error_description ?? out.error))}</p></main>`,
      );
    },
  });
  const oidc = provider.callback();

  let ignoringFreshLogin = false;
  let loginClockOffsetSeconds = 0;
  let tokenRequestsFail = false;
  handle = (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    if (tokenRequestsFail && url.pathname === `${mountPath}/token`) {
      res.statusCode = 503;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end('down for maintenance');
      return;
    }
    if (ignoringFreshLogin && url.pathname === `${mountPath}/auth`) {
      url.searchParams.delete('prompt');
      url.searchParams.delete('max_age');
      req.url = `${url.pathname}${url.search}`;
    }
    const interaction = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/.exec(url.pathname);
    if (!interaction) {
      // Mounted at the issuer's path, as an app mounted by Express is: the provider reads its mount from originalUrl.
      if (mountPath && url.pathname.startsWith(`${mountPath}/`)) {
        (req as IncomingMessage & { originalUrl?: string }).originalUrl = req.url;
        req.url = (req.url ?? '/').slice(mountPath.length);
      }
      oidc(req, res);
      return;
    }
    void (async () => {
      try {
        const details = await provider.interactionDetails(req, res);
        const clientId = String(details.params.client_id ?? '');
        if (req.method === 'GET' && !interaction[2]) {
          res.setHeader('Content-Type', 'text/html; charset=utf-8');
          res.setHeader('Cache-Control', 'no-store');
          res.end(loginPage(details.uid, clientId));
          return;
        }
        if (req.method === 'POST' && interaction[2]) {
          const form = await readForm(req);
          const member = staffByUsername.get(form.get('username') ?? '');
          if (!member || member.password !== form.get('password')) {
            res.statusCode = 401;
            res.setHeader('Content-Type', 'text/html; charset=utf-8');
            res.end(loginPage(details.uid, clientId, 'Wrong user name or password.'));
            return;
          }
          await provider.interactionFinished(
            req,
            res,
            {
              login: {
                accountId: subjectOf(member),
                ts: Math.floor(Date.now() / 1000) + loginClockOffsetSeconds,
              },
            },
            { mergeWithLastSubmission: false },
          );
          return;
        }
        res.statusCode = 405;
        res.end();
      } catch (error) {
        res.statusCode = 400;
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(
          page('Sign-in error', `<main><h1>Sign-in error</h1><p>${escapeHtml((error as Error).message)}</p></main>`),
        );
      }
    })();
  };

  return {
    issuer,
    staff: options.staff,
    ignoreFreshLoginRequests: (on) => {
      ignoringFreshLogin = on;
    },
    setLoginClockOffset: (seconds) => {
      loginClockOffsetSeconds = seconds;
    },
    failTokenRequests: (on) => {
      tokenRequestsFail = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
