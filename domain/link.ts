// Links: a partner user's connection to a wallet account as the ops API shows it (never a token),
// its kinds and states. Plain data and zod only.
import { z } from 'zod';

/** An embedded-app user's partner user id (contract-decisions section 10): `wallet:{profileId}`. */
export const embeddedPartnerUserId = (profileId: string): string => `wallet:${profileId}`;

/**
 * Whether a partner user id is of the embedded-app users' namespace (`wallet:`, in any case). A standalone login never
 * binds one: it would make another wallet count as that user's own, which a fund key may pay their balance to.
 */
export const isEmbeddedPartnerUserId = (partnerUserId: string): boolean => /^wallet:/i.test(partnerUserId);

/**
 * Whose own wallet a link is, for whose money a funding may move: its partner user's, except a standalone link under
 * an embedded-app user's id (stored before such a login was refused), which is no one's own wallet.
 */
export function ownerOfLink(link: { kind: string; partnerUserId: string }): string | null {
  return link.kind === 'STANDALONE' && isEmbeddedPartnerUserId(link.partnerUserId) ? null : link.partnerUserId;
}

/** STANDALONE: from the connect service's login; EMBEDDED: from the session URL. */
export const linkKinds = ['STANDALONE', 'EMBEDDED'] as const;
/** REAUTH_REQUIRED: the wallet no longer accepts the tokens; UNLINKED: tokens deleted, history kept. */
export const linkStatuses = ['ACTIVE', 'REAUTH_REQUIRED', 'UNLINKED'] as const;

export const linkSchema = z.object({
  linkId: z.string(),
  partnerUserId: z.string(),
  profileId: z.string(),
  maskedUserId: z.string().nullable(),
  kind: z.enum(linkKinds),
  status: z.enum(linkStatuses),
  scopes: z.array(z.string()),
  /** When the stored tokens expire (the tokens themselves are never shown); null once unlinked. */
  tokens: z
    .object({
      accessTokenExpiresAt: z.string(),
      refreshTokenExpiresAt: z.string().nullable(),
      version: z.number().int(),
      refreshedAt: z.string().nullable(),
    })
    .nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type LinkView = z.infer<typeof linkSchema>;
