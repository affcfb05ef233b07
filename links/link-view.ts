// The link as the ops API shows it (status, kind, scopes, token expiry; never a token), a user's
// links and a link's history (the ops API and the console read them here), and the answer of GET
// /ops/links/{linkId}/profile (the wallet profile by scope, fetched on each request).
import { z } from 'zod';
import type { LinkView } from '../domain/link.ts';
import type { Database } from '../lib/database.ts';
import { decodeTimeIdCursor, encodeTimeIdCursor } from '../lib/page-cursor.ts';
import { profileByScopeSchema, profileScopes } from '../wallet/index.ts';

export const linkProfileSchema = z.object({
  linkId: z.string(),
  fetchedAt: z.string(),
  /** The wallet call that gave the profile, for the operator's support. */
  requestReferenceNo: z.string(),
  scopes: z.array(z.enum(profileScopes)),
  /** Identity document URLs are pre-signed for 15 minutes from `fetchedAt`; null without that scope. */
  documentUrlsExpireAt: z.string().nullable(),
  profile: profileByScopeSchema,
});
export type LinkProfileView = z.infer<typeof linkProfileSchema>;

export async function linkView(database: Database, linkId: string): Promise<LinkView | null> {
  const link = await database.link.findUnique({
    where: { id: linkId },
    include: {
      tokens: { select: { accessTokenExpiresAt: true, refreshTokenExpiresAt: true, version: true, refreshedAt: true } },
    },
  });
  if (!link) return null;
  return {
    linkId: link.id,
    partnerUserId: link.partnerUserId,
    profileId: link.profileId,
    maskedUserId: link.maskedUserId,
    kind: link.kind,
    status: link.status,
    scopes: link.scopes,
    tokens: link.tokens
      ? {
          accessTokenExpiresAt: link.tokens.accessTokenExpiresAt.toISOString(),
          refreshTokenExpiresAt: link.tokens.refreshTokenExpiresAt?.toISOString() ?? null,
          version: link.tokens.version,
          refreshedAt: link.tokens.refreshedAt?.toISOString() ?? null,
        }
      : null,
    createdAt: link.createdAt.toISOString(),
    updatedAt: link.updatedAt.toISOString(),
  };
}

/** Whose links to find: by partner user id or by the wallet's profile id. */
export type LinkSearch = { partnerUserId: string } | { profileId: string };

/** A user's links, newest first (at most 100), as GET /ops/links and the console list them. */
export async function findLinks(database: Database, search: LinkSearch): Promise<LinkView[]> {
  const links = await database.link.findMany({
    where: 'partnerUserId' in search ? { partnerUserId: search.partnerUserId } : { profileId: search.profileId },
    orderBy: { createdAt: 'desc' },
    take: 100,
    select: { id: true },
  });
  const items = await Promise.all(links.map((link) => linkView(database, link.id)));
  return items.filter((item) => item !== null);
}

/** One entry of a link's history: linked, refreshed, refused, unlinked (and by whom). */
export interface LinkEventView {
  type: string;
  detail: string | null;
  actor: string | null;
  requestReferenceNo: string | null;
  at: Date;
}

/** A link's history, newest first, a page at a time from the cursor on (the (link_id, at) index). */
export async function linkEvents(
  database: Database,
  linkId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ items: LinkEventView[]; nextCursor: string | null } | null> {
  const after = page.cursor === undefined ? null : decodeTimeIdCursor(page.cursor);
  if (page.cursor !== undefined && !after) return null;
  const rows = await database.linkEvent.findMany({
    where: {
      linkId,
      ...(after
        ? { at: { lte: after.at }, OR: [{ at: { lt: after.at } }, { at: after.at, id: { lt: after.id } }] }
        : {}),
    },
    orderBy: [{ at: 'desc' }, { id: 'desc' }],
    take: page.limit + 1,
    select: { id: true, type: true, detail: true, actor: true, requestReferenceNo: true, at: true },
  });
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  return {
    items: items.map(({ id: _id, ...event }) => event),
    nextCursor: rows.length > page.limit && last ? encodeTimeIdCursor(last.at, last.id) : null,
  };
}
