// Links: a partner user's connection to a wallet account as the ops API shows it (never a token),
// its kinds and states. Plain data and zod only.
import { z } from 'zod';

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
