// The link as the ops API shows it (status, kind, scopes, token expiry; never a token) and the
// answer of GET /ops/links/{linkId}/profile (the wallet profile by scope, fetched on each request).
import { z } from 'zod';
import type { LinkView } from '../domain/link.ts';
import type { Database } from '../lib/database.ts';
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
    include: { tokens: { select: { accessTokenExpiresAt: true, refreshTokenExpiresAt: true, version: true, refreshedAt: true } } },
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
