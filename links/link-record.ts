// Links: a partner user's connection to a wallet account. Found or created by the wallet's
// profileId (one per kind), with its tokens replaced in the same transaction.
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
}

export async function saveLinkWithTokens(database: Database, tokens: TokenStore, input: LinkInput): Promise<{ linkId: string; created: boolean }> {
  return database.$transaction(async (tx) => {
    const existing = await tx.link.findUnique({ where: { profileId_kind: { profileId: input.profileId, kind: input.kind } }, select: { id: true } });
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
        partnerUserId: input.partnerUserId,
        maskedUserId: input.maskedUserId ?? undefined,
        scopes: input.scopes,
        status: 'ACTIVE',
      },
      select: { id: true },
    });
    await tokens.save(tx, link.id, input.tokens);
    await tx.linkEvent.create({
      data: {
        linkId: link.id,
        partnerUserId: input.partnerUserId,
        type: existing ? 'RELINKED' : 'LINKED',
        requestReferenceNo: input.requestReferenceNo,
        detail: `${input.kind.toLowerCase()} login`,
      },
    });
    return { linkId: link.id, created: !existing };
  });
}

/** Removes a link's tokens; the link stays, UNLINKED, for its history. */
export async function unlink(database: Database, tokens: TokenStore, linkId: string): Promise<boolean> {
  return database.$transaction(async (tx) => {
    const link = await tx.link.findUnique({ where: { id: linkId }, select: { id: true } });
    if (!link) return false;
    await tokens.remove(tx, linkId);
    await tx.link.update({ where: { id: linkId }, data: { status: 'UNLINKED' } });
    await tx.linkEvent.create({ data: { linkId, type: 'UNLINKED' } });
    return true;
  });
}
