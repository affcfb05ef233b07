// Who a standalone login binds (contract-decisions section 12), shown as attacks that fail: the
// partner user id comes only from a login URL minted by the ops API or a token signed with
// LOGIN_SIGNING_KEY; the OAuth state is bound to a cookie set at start; a login never moves an
// existing link to another partner user.
import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinkUnlinkedSinceError, unlink } from '../../links/link-record.ts';
import { mintLoginGrant } from '../../links/login-grants.ts';
import { personActorName } from '../../domain/actor.ts';
import { loginThroughPages } from '../support/wallet-sandbox.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { saveStandaloneLink } from '../support/standalone-link.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { lockWaits } from '../support/lock-waits.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
const signingKey = randomBytes(32);

beforeAll(async () => {
  stack = await startPartnerStack({ loginSigningKey: signingKey });
});
afterAll(async () => {
  await stack?.close();
});

interface Started {
  status: number;
  /** The wallet's login page, when the start redirected there. */
  authorizeUrl: string | undefined;
  /** The login cookie the start set, as a Cookie header value. */
  cookie: string | undefined;
  html: string;
}

async function start(query: Record<string, string>): Promise<Started> {
  const response = await fetch(`${stack.apiBase}/connect/start?${new URLSearchParams(query)}`, { redirect: 'manual' });
  const setCookie = response.headers.getSetCookie().map((value) => value.split(';')[0]!);
  return {
    status: response.status,
    authorizeUrl: response.headers.get('location') ?? undefined,
    cookie: setCookie.length > 0 ? setCookie.join('; ') : undefined,
    html: await response.text(),
  };
}

/** A login URL for `partnerUserId`, as the partner gets it from the ops API. */
async function mintLoginUrl(partnerUserId: string, mobile?: string): Promise<string> {
  const response = await stack.opsFetch('/ops/links/login-urls', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ partnerUserId, ...(mobile ? { mobile } : {}) }),
  });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { url: string; expiresAt: string };
  return body.url;
}

const startFromUrl = (url: string) => start(Object.fromEntries(new URL(url).searchParams));

const callback = (params: URLSearchParams, cookie?: string) =>
  fetch(`${stack.apiBase}/connect/callback?${params}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });

/** The victim: a wallet user already linked to partner user `victim-…` (by an earlier, proper login). */
async function linkedVictim(password: string) {
  const user = await stack.admin.createUser({ password });
  const partnerUserId = `victim-${randomUUID()}`;
  const { linkId } = await saveStandaloneLink(stack, user, partnerUserId);
  return { user, partnerUserId, linkId };
}

describe('the link hijack through /connect/start', () => {
  it('a start link naming a partner user is refused, so it cannot take over the victim’s link', async () => {
    const victim = await linkedVictim('pw-hijack');
    const attack = await start({ partnerUserId: `attacker-${randomUUID()}`, mobile: victim.user.mobile });
    if (attack.authorizeUrl) {
      // The old code redirected: the victim, sent this link, logs in to their wallet.
      const params = await loginThroughPages(stack.sandbox, attack.authorizeUrl, 'pw-hijack');
      await callback(params, attack.cookie);
    }
    const link = await stack.database.link.findUniqueOrThrow({ where: { id: victim.linkId } });
    expect(link.partnerUserId).toBe(victim.partnerUserId);
    expect(attack.status).toBe(400);
  });

  it('a login for another partner user never moves an existing link: a clear page, the link and its tokens unchanged', async () => {
    const victim = await linkedVictim('pw-move');
    const before = await stack.tokens.read(stack.database, victim.linkId);
    // The attacker is a partner user too: their own, proper login URL, sent to the victim.
    const attacker = `attacker-${randomUUID()}`;
    const started = await startFromUrl(await mintLoginUrl(attacker));
    expect(started.status).toBe(302);
    // The wallet's login page asks who logs in: the victim types their own mobile number.
    const loginPage = new URL(started.authorizeUrl!);
    loginPage.searchParams.set('user_id', victim.user.mobile);
    const params = await loginThroughPages(stack.sandbox, loginPage.toString(), 'pw-move');
    const response = await callback(params, started.cookie);
    expect(response.status).toBe(409);
    expect(await response.text()).toContain('already linked');
    const link = await stack.database.link.findUniqueOrThrow({ where: { id: victim.linkId } });
    expect(link.partnerUserId).toBe(victim.partnerUserId);
    expect(await stack.tokens.read(stack.database, victim.linkId)).toEqual(before);
    expect(await stack.database.link.count({ where: { partnerUserId: attacker } })).toBe(0);
    const refused = await stack.database.linkEvent.findFirst({
      where: { partnerUserId: attacker, type: 'LOGIN_FAILED' },
    });
    expect(refused?.detail).toContain('linked to another partner user');
  });

  it('a callback without the cookie its start set is refused (login CSRF): nothing is linked', async () => {
    const user = await stack.admin.createUser({ password: 'pw-csrf' });
    // The attacker starts a login in their own browser and sends the wallet's login page to the victim.
    const started = await startFromUrl(await mintLoginUrl(`attacker-${randomUUID()}`, user.mobile));
    expect(started.cookie).toBeDefined();
    const params = await loginThroughPages(stack.sandbox, started.authorizeUrl!, 'pw-csrf');
    const inVictimsBrowser = await callback(params);
    expect(inVictimsBrowser.status).toBe(400);
    expect(await stack.database.link.count({ where: { profileId: user.profileId } })).toBe(0);
    // The state was not spent by the refused callback: the attacker's own browser could still finish, the victim's
    // cannot.
    const wrongCookie = await callback(params, 'walletflow_login=forged');
    expect(wrongCookie.status).toBe(400);
    expect(await stack.database.link.count({ where: { profileId: user.profileId } })).toBe(0);
  });
});

describe('login URLs and signed login tokens', () => {
  it('no standalone login binds an id of the embedded-app users’ wallet:{profileId} namespace: a login URL for one is refused, a signed token naming one is refused, and a standalone link under one is never stored', async () => {
    const embeddedId = `wallet:${randomUUID()}`;
    for (const partnerUserId of [embeddedId, `WALLET:${randomUUID()}`]) {
      const minted = await stack.opsFetch('/ops/links/login-urls', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ partnerUserId }),
      });
      expect(minted.status, partnerUserId).toBe(400);
    }
    const user = await stack.admin.createUser({ password: 'pw-reserved' });
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(embeddedId)
      .setExpirationTime(Math.floor(Date.now() / 1000) + 300)
      .sign(signingKey);
    const started = await start({ login: token });
    expect(started.status).toBe(400);
    expect(started.html).toContain('not valid');
    await expect(saveStandaloneLink(stack, user, embeddedId)).rejects.toThrow(/wallet:/);
    expect(await stack.database.link.count({ where: { partnerUserId: embeddedId } })).toBe(0);
    // A login URL minted for one before such a URL was refused: spent for nothing.
    const { token: minted } = await mintLoginGrant(stack.database, { partnerUserId: embeddedId, actor: 'before' });
    const fromOldUrl = await start({ login: minted });
    expect([fromOldUrl.status, fromOldUrl.html.includes('not valid')]).toEqual([400, true]);
    // A login begun for one before (its state stored): the callback exchanges nothing and links nothing.
    const begun = await startFromUrl(await mintLoginUrl(`partner-${randomUUID()}`, user.mobile));
    expect(begun.status).toBe(302);
    await stack.database.loginState.updateMany({
      where: { consumedAt: null, outcome: null, createdAt: { gt: new Date(Date.now() - 60_000) } },
      data: { partnerUserId: embeddedId },
    });
    const params = await loginThroughPages(stack.sandbox, begun.authorizeUrl!, 'pw-reserved');
    const answered = await callback(params, begun.cookie);
    expect(answered.status).toBe(400);
    expect(await answered.text()).toContain('was not linked');
    expect(await stack.database.link.count({ where: { profileId: user.profileId } })).toBe(0);
    const refused = await stack.database.linkEvent.findFirst({
      where: { partnerUserId: embeddedId, type: 'LOGIN_FAILED' },
    });
    expect(refused?.detail).toContain('embedded-app user');
  });

  it('first logins of one wallet at once link it once: the same partner user’s all succeed, another’s is refused as owned, none fails', async () => {
    // Found by a read: with no link row yet, the row lock took nothing: each save found no link, each wrote LINKED as
    // its creator, and the tokens' version guard and the unlinked-since check, which read the link, were passed by.
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const same = await Promise.allSettled(
      Array.from({ length: 6 }, () => saveStandaloneLink(stack, user, 'partner-first-login')),
    );
    expect(same.map((answer) => answer.status)).toEqual(Array(6).fill('fulfilled'));
    expect(
      same.filter((answer) => answer.status === 'fulfilled' && answer.value.created),
      'one of them created the link',
    ).toHaveLength(1);
    const other = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const rivals = await Promise.allSettled(
      ['partner-a', 'partner-b', 'partner-a', 'partner-b'].map((partnerUserId) =>
        saveStandaloneLink(stack, other, partnerUserId),
      ),
    );
    const names = rivals.map((answer) =>
      answer.status === 'fulfilled' ? 'linked' : (answer.reason as Error).constructor.name,
    );
    expect(names.filter((name) => name === 'linked')).toHaveLength(2);
    expect(names.filter((name) => name === 'LinkOwnedError')).toHaveLength(2);
    expect(await stack.database.link.count({ where: { profileId: { in: [user.profileId, other.profileId] } } })).toBe(
      2,
    );
  });

  it('an unlink that waited behind a refresh is dated when it took effect: a login begun while it waited does not link the wallet again', async () => {
    // Found by a read: the UNLINKED event took its transaction's start (now()), before the locks it waited for, so a
    // login begun while it waited (a refresh holding the tokens' row through its wallet call) counted no unlink since.
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const partnerUserId = `partner-${randomUUID()}`;
    const { linkId } = await saveStandaloneLink(stack, user, partnerUserId);
    // A refresh in flight: the tokens' row held as the vault holds it.
    const refresh = new pg.Client({ connectionString: testDatabaseUrl() });
    await refresh.connect();
    let unlinking: Promise<boolean> | undefined;
    try {
      await refresh.query('BEGIN TRANSACTION');
      await refresh.query('SELECT 1 FROM token_set WHERE link_id = $1 FOR UPDATE', [linkId]);
      unlinking = unlink(stack.database, stack.tokens, linkId, 'ops-unlinker');
      await waitUntil(
        () => lockWaits(stack.database),
        (waiting) => waiting > 0,
        10_000,
      );
      // The user logs in again while the unlink waits.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [begun] = await stack.database.$queryRaw<Array<{ at: Date }>>`SELECT statement_timestamp() AS at`;
      const loginBegunAt = begun!.at;
      await refresh.query('COMMIT TRANSACTION');
      expect(await unlinking).toBe(true);
      await expect(saveStandaloneLink(stack, user, partnerUserId, 3_600_000, loginBegunAt)).rejects.toBeInstanceOf(
        LinkUnlinkedSinceError,
      );
      expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('UNLINKED');
    } finally {
      await refresh.query('ROLLBACK TRANSACTION').catch(() => undefined);
      await unlinking?.catch(() => undefined);
      await refresh.end();
    }
  });

  it('an ops login URL links the wallet to its partner user, once', async () => {
    const user = await stack.admin.createUser({ password: 'pw-url' });
    const partnerUserId = `partner-${randomUUID()}`;
    const url = await mintLoginUrl(partnerUserId, user.mobile);
    expect(url.startsWith(`${stack.apiBase}/connect/start?login=`)).toBe(true);
    const started = await startFromUrl(url);
    expect(started.status).toBe(302);
    expect(new URL(started.authorizeUrl!).searchParams.get('user_id')).toBe(user.mobile);
    const params = await loginThroughPages(stack.sandbox, started.authorizeUrl!, 'pw-url');
    const response = await callback(params, started.cookie);
    expect(response.status).toBe(200);
    const link = await stack.database.link.findUniqueOrThrow({ where: { id: response.headers.get('x-link-id')! } });
    expect(link).toMatchObject({ partnerUserId, profileId: user.profileId, status: 'ACTIVE' });
    // Single use: the same URL again is refused.
    const again = await startFromUrl(url);
    expect(again.status).toBe(400);
    expect(again.html).toContain('already been used');
  });

  it('records who minted a login URL (the ops key’s name), and an expired one is refused', async () => {
    const partnerUserId = `partner-${randomUUID()}`;
    const url = await mintLoginUrl(partnerUserId);
    // A mail or chat scanner's HEAD of a link (or of a callback) spends nothing: 405; the person's click still works.
    const scanned = await mintLoginUrl(`scanned-${randomUUID()}`);
    for (const target of [scanned, `${stack.apiBase}/connect/callback?state=x&code=y`]) {
      const head = await fetch(target, { method: 'HEAD', redirect: 'manual' });
      expect([head.status, head.headers.get('allow')], target).toEqual([405, 'GET']);
    }
    const clicked = await startFromUrl(scanned);
    expect(clicked.status, clicked.html).toBe(302);
    const minted = await stack.database.linkEvent.findFirstOrThrow({
      where: { partnerUserId, type: 'LOGIN_URL_MINTED' },
    });
    expect(minted.actor).toBe('default');
    await stack.database.loginGrant.updateMany({
      where: { partnerUserId },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const expired = await startFromUrl(url);
    expect(expired.status).toBe(400);
    expect(expired.html).toContain('expired');
  });

  it('records a person’s whole identity on a link’s history: a login URL they minted and an unlink they made', async () => {
    // A provider's person: a long display name and a 43-character subject (Azure's pairwise sub), as the console
    // records them (personActorName: up to 128 characters). The history cut them at 64: no `)` and part of the subject.
    const person = personActorName('Maria Concepcion Santos de la Cruz', 'A'.repeat(43));
    expect(person.length).toBeGreaterThan(64);
    const { partnerUserId, linkId } = await linkedVictim('pw-identity');
    await mintLoginGrant(stack.database, { partnerUserId, actor: person });
    expect(await unlink(stack.database, stack.tokens, linkId, person)).toBe(true);
    const events = await stack.database.linkEvent.findMany({
      where: {
        OR: [
          { partnerUserId, type: 'LOGIN_URL_MINTED' },
          { linkId, type: 'UNLINKED' },
        ],
      },
    });
    expect(events.map((event) => [event.type, event.actor]).sort()).toEqual([
      ['LOGIN_URL_MINTED', person],
      ['UNLINKED', person],
    ]);
  });

  it('a token signed with LOGIN_SIGNING_KEY starts a login for its subject, once', async () => {
    const user = await stack.admin.createUser({ password: 'pw-signed' });
    const partnerUserId = `signed-${randomUUID()}`;
    const token = await new SignJWT({ mobile: user.mobile })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(partnerUserId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signingKey);
    const started = await start({ login: token });
    expect(started.status).toBe(302);
    const params = await loginThroughPages(stack.sandbox, started.authorizeUrl!, 'pw-signed');
    const response = await callback(params, started.cookie);
    expect(response.status).toBe(200);
    expect(await stack.database.link.findFirst({ where: { partnerUserId } })).toMatchObject({
      profileId: user.profileId,
    });
    expect((await start({ login: token })).status).toBe(400);
  });

  it('no login starts without the partner’s signature: forged, unsigned, wrong-key, long-lived and subject-less tokens are refused and store nothing', async () => {
    const otherKey = randomBytes(32);
    const sign = (key: Buffer, build: (jwt: SignJWT) => SignJWT) =>
      build(new SignJWT({}).setProtectedHeader({ alg: 'HS256' })).sign(key);
    const unsigned = (claims: object) =>
      `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    const refused = [
      await sign(otherKey, (jwt) => jwt.setSubject('someone').setExpirationTime('5m')),
      unsigned({ sub: 'someone', exp: Math.floor(Date.now() / 1000) + 300 }),
      await sign(signingKey, (jwt) => jwt.setSubject('someone').setExpirationTime('1h')),
      await sign(signingKey, (jwt) => jwt.setSubject('someone').setExpirationTime(Math.floor(Date.now() / 1000) - 120)),
      await sign(signingKey, (jwt) => jwt.setExpirationTime('5m')),
      await sign(signingKey, (jwt) => jwt.setSubject('someone')),
      await new SignJWT({})
        .setProtectedHeader({ alg: 'HS512' })
        .setSubject('someone')
        .setExpirationTime('5m')
        .sign(signingKey),
      randomBytes(32).toString('base64url'),
    ];
    const before = await stack.database.loginState.count();
    for (const login of refused) {
      const answer = await start({ login });
      expect(answer.status, login).toBe(400);
      expect(answer.authorizeUrl).toBeUndefined();
    }
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 300 }),
        fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
        async (login, partnerUserId) => {
          const answer = await start({
            login,
            ...(partnerUserId === undefined ? {} : { partnerUserId }),
            mobile: '09171234567',
          });
          expect(answer.status).toBe(400);
        },
      ),
      { numRuns: 40 },
    );
    expect(await stack.database.loginState.count()).toBe(before);
  });
});

describe('signed login tokens: re-encodings, other JWTs, pinned numbers', () => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  /**
   * The same token with its signature's last character changed in the 2 bits base64url leaves unused: the same bytes.
   */
  const reEncodings = (token: string) => {
    const last = token.at(-1)!;
    const index = alphabet.indexOf(last);
    return [1, 2, 3].map((bits) => token.slice(0, -1) + alphabet[index ^ bits]!);
  };

  it('a used token does not start a login again with its signature re-encoded, and a non-canonical encoding is refused outright', async () => {
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(`signed-${randomUUID()}`)
      .setExpirationTime('5m')
      .sign(signingKey);
    expect((await start({ login: token })).status).toBe(302);
    for (const variant of reEncodings(token)) {
      const answer = await start({ login: variant });
      expect(answer.status, variant).toBe(400);
      expect(answer.authorizeUrl).toBeUndefined();
    }
    const fresh = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(`signed-${randomUUID()}`)
      .setExpirationTime('5m')
      .sign(signingKey);
    const [nonCanonical] = reEncodings(fresh);
    expect((await start({ login: nonCanonical! })).status).toBe(400);
    // The canonical one still works: the refusal above spent nothing.
    expect((await start({ login: fresh })).status).toBe(302);
  });

  it('another JWT signed with the same key is not a login: a foreign audience or type is refused', async () => {
    const sign = (build: (jwt: SignJWT) => SignJWT, header: Record<string, string> = {}) =>
      build(
        new SignJWT({})
          .setProtectedHeader({ alg: 'HS256', ...header })
          .setSubject(`signed-${randomUUID()}`)
          .setExpirationTime('5m'),
      ).sign(signingKey);
    for (const token of [
      await sign((jwt) => jwt.setAudience('billing-api')),
      await sign((jwt) => jwt, { typ: 'at+jwt' }),
    ]) {
      expect((await start({ login: token })).status).toBe(400);
    }
    // A login token may say what it is, in either spelling of its type (RFC 7515 4.1.9).
    expect(
      (await start({ login: await sign((jwt) => jwt.setAudience('walletflow:login'), { typ: 'JWT' }) })).status,
    ).toBe(302);
    expect((await start({ login: await sign((jwt) => jwt, { typ: 'application/jwt' }) })).status).toBe(302);
  });

  it('a login pinned to a mobile number links only the wallet with that number: another account logging in on the page is refused, nothing linked', async () => {
    const meant = await stack.admin.createUser({ password: 'pw-meant' });
    const other = await stack.admin.createUser({ password: 'pw-other' });
    const partnerUserId = `pinned-${randomUUID()}`;
    const started = await startFromUrl(await mintLoginUrl(partnerUserId, meant.mobile));
    expect(started.status).toBe(302);
    // Someone else types their own number and password on the wallet's login page.
    const authorize = new URL(started.authorizeUrl!);
    authorize.searchParams.set('user_id', other.mobile);
    const params = await loginThroughPages(stack.sandbox, authorize.toString(), 'pw-other');
    const response = await callback(params, started.cookie);
    expect(response.status).toBe(403);
    expect(await response.text()).toContain('mobile number');
    expect(await stack.database.link.findFirst({ where: { partnerUserId } })).toBeNull();
    expect(await stack.database.linkEvent.findFirst({ where: { partnerUserId, type: 'LOGIN_FAILED' } })).toMatchObject({
      detail: expect.stringContaining('mobile'),
    });
  });
});
