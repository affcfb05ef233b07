// Links: a partner user's connection to a wallet account. Found or created by the wallet's
// profileId (one per kind), with its tokens replaced in the same transaction unless it holds a
// newer pair. A login never moves
// a link to another partner user (contract-decisions section 12): that refusal is LinkOwnedError; nor stores a
// standalone link under an embedded-app user's id (EmbeddedPartnerUserIdError).
import { isEmbeddedPartnerUserId } from '../domain/link.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { Database } from '../lib/database.ts';
import type { PlainTokens, TokenStore } from './token-store.ts';

export interface LinkInput {
  partnerUserId: string;
  profileId: string;
  maskedUserId: string | null;
  kind: 'STANDALONE' | 'EMBEDDED';
  scopes: string[];
  tokens: PlainTokens;
  requestReferenceNo: string | null;
  /**
   * When the login this link comes from began (an embedded session stored): a link unlinked after it stays unlinked
   * (LinkUnlinkedSinceError), the unlink being newer than the login. Absent: any login links again.
   */
  loginBegunAt?: Date;
}

/** The wallet is linked to another partner user: nothing was changed. */
export class LinkOwnedError extends Error {
  readonly code = 'LINK_OWNED_BY_ANOTHER_USER';
  constructor(readonly linkId: string) {
    super('the wallet is linked to another partner user');
    this.name = 'LinkOwnedError';
  }
}

/** A standalone link under an embedded-app user's id (`wallet:…`, domain/link.ts): never stored. */
export class EmbeddedPartnerUserIdError extends Error {
  readonly code = 'PARTNER_USER_ID_RESERVED';
  constructor() {
    super('a standalone link cannot take an id of the wallet: namespace (embedded-app users)');
    this.name = 'EmbeddedPartnerUserIdError';
  }
}

/** The link was unlinked after the login began (an ops or console revoke): the older login does not undo it. */
export class LinkUnlinkedSinceError extends Error {
  readonly code = 'LINK_UNLINKED';
  constructor(readonly linkId: string) {
    super('the link was unlinked after this login began');
    this.name = 'LinkUnlinkedSinceError';
  }
}

export function saveLinkWithTokens(
  database: Database,
  tokens: TokenStore,
  input: LinkInput,
): Promise<{ linkId: string; created: boolean }> {
  return database.$transaction((tx) => saveLinkWithTokensIn(tx, tokens, input));
}

/** As saveLinkWithTokens, within the caller's transaction (one that moves what the login came from with it). */
export async function saveLinkWithTokensIn(
  tx: Prisma.TransactionClient,
  tokens: TokenStore,
  input: LinkInput,
): Promise<{ linkId: string; created: boolean }> {
  if (input.kind === 'STANDALONE' && isEmbeddedPartnerUserId(input.partnerUserId))
    throw new EmbeddedPartnerUserIdError();
  // One save of a wallet's link at a time, the first one too (a row lock takes nothing while there is no row): the
  // second finds the first's link, as owned, newer or unlinked since, and its event says RELINKED.
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`walletflow:link:${input.kind}:${input.profileId}`}, 0))`;
  // Locked: two logins of the same wallet for different partner users cannot both pass the check. (NO KEY: a token
  // refresh's history row, whose reference to the link takes a KEY SHARE lock, does not wait for it.)
  const [existing] = await tx.$queryRaw<Array<{ id: string; partner_user_id: string; status: string }>>`
    SELECT id, partner_user_id, status FROM link WHERE profile_id = ${input.profileId} AND kind = ${input.kind}::"LinkKind" FOR NO KEY UPDATE`;
  if (existing && existing.partner_user_id !== input.partnerUserId) throw new LinkOwnedError(existing.id);
  if (existing && existing.status === 'UNLINKED' && input.loginBegunAt) {
    const unlinkedSince = await tx.linkEvent.count({
      where: { linkId: existing.id, type: 'UNLINKED', at: { gt: input.loginBegunAt } },
    });
    if (unlinkedSince > 0) throw new LinkUnlinkedSinceError(existing.id);
  }
  const link = await tx.link.upsert({
    where: { profileId_kind: { profileId: input.profileId, kind: input.kind } },
    create: {
      partnerUserId: input.partnerUserId,
      profileId: input.profileId,
      maskedUserId: input.maskedUserId,
      kind: input.kind,
      scopes: input.scopes,
      status: 'ACTIVE',
    },
    update: {
      maskedUserId: input.maskedUserId ?? undefined,
      scopes: input.scopes,
      status: 'ACTIVE',
    },
    select: { id: true, partnerUserId: true },
  });
  // A row created concurrently by another partner user's login is theirs: roll back.
  if (link.partnerUserId !== input.partnerUserId) throw new LinkOwnedError(link.id);
  // Version guard: a late login or onboarding never replaces a newer pair an
  // active link already holds (a refresh, or a later session, gave it); newer = expires later.
  const stored = existing
    ? await tx.tokenSet.findUnique({ where: { linkId: existing.id }, select: { accessTokenExpiresAt: true } })
    : null;
  const keepNewer =
    existing?.status === 'ACTIVE' && stored !== null && stored.accessTokenExpiresAt > input.tokens.accessTokenExpiresAt;
  if (!keepNewer) await tokens.save(tx, link.id, input.tokens);
  await tx.linkEvent.create({
    data: {
      linkId: link.id,
      partnerUserId: input.partnerUserId,
      type: existing ? 'RELINKED' : 'LINKED',
      requestReferenceNo: input.requestReferenceNo,
      detail: `${input.kind.toLowerCase()} login${keepNewer ? '; the newer tokens it held are kept' : ''}`,
    },
  });
  return { linkId: link.id, created: !existing };
}

/**
 * Removes a link's tokens and ends its web sessions in the wallet app; the link stays, UNLINKED, for its history.
 * `actor`: the ops key's name, or the console person's.
 */
export async function unlink(database: Database, tokens: TokenStore, linkId: string, actor?: string): Promise<boolean> {
  return database.$transaction(async (tx) => {
    // The link first, then its tokens, as a login locks them (the other order could deadlock beside one).
    const [link] = await tx.$queryRaw<Array<{ id: string }>>`
      SELECT id::text AS id FROM link WHERE id = ${linkId}::uuid FOR NO KEY UPDATE`;
    if (!link) return false;
    await tokens.remove(tx, linkId);
    await tx.link.update({ where: { id: linkId }, data: { status: 'UNLINKED' } });
    // Its web sessions in the wallet app end with it: a copied cookie neither reads the page nor, once the user links
    // again (the same link), acts in it.
    await tx.$executeRaw`
      DELETE FROM app_session a USING embedded_session e WHERE a.embedded_session_id = e.id AND e.link_id = ${linkId}::uuid`;
    // Stamped by the database's clock, as sessions are: a login begun before it never undoes it (saveLinkWithTokensIn).
    // The time it takes effect, its locks held (clock_timestamp), not its transaction's start (now()): an unlink that
    // waited behind a refresh holding the tokens' row was dated before a login begun while it waited, which then linked
    // the wallet again.
    await tx.$executeRaw`
      INSERT INTO link_event (link_id, type, actor, at) VALUES (${linkId}::uuid, 'UNLINKED', ${actor?.slice(0, 128) ?? null}, clock_timestamp())`;
    return true;
  });
}
