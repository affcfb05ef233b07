// Ops routes for links: read a link (status, kind, scopes, token expiry; never tokens) and unlink
// it (its tokens are deleted; the link stays, UNLINKED, with its history).
import { Router } from 'express';
import { z } from 'zod';
import type { Database } from '../lib/database.ts';
import { unlink } from '../lib/links.ts';
import type { TokenStore } from '../lib/token-store.ts';
import { sendProblem } from './problem.ts';

const linkIdSchema = z.uuid();

export interface OpsLinksDependencies {
  database: Database;
  tokens: TokenStore;
}

async function linkView(database: Database, linkId: string) {
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

export function opsLinksRouter(deps: OpsLinksDependencies): Router {
  const router = Router();

  router.get('/links/:linkId', async (req, res) => {
    const linkId = linkIdSchema.safeParse(req.params.linkId);
    if (!linkId.success) {
      sendProblem(res, { status: 400, code: 'INVALID_LINK_ID', title: 'Bad Request', detail: 'linkId must be a UUID' });
      return;
    }
    const view = await linkView(deps.database, linkId.data);
    if (!view) {
      sendProblem(res, { status: 404, code: 'LINK_NOT_FOUND', title: 'Not Found', detail: `no link ${linkId.data}` });
      return;
    }
    res.json(view);
  });

  router.delete('/links/:linkId', async (req, res) => {
    const linkId = linkIdSchema.safeParse(req.params.linkId);
    if (!linkId.success) {
      sendProblem(res, { status: 400, code: 'INVALID_LINK_ID', title: 'Bad Request', detail: 'linkId must be a UUID' });
      return;
    }
    if (!(await unlink(deps.database, deps.tokens, linkId.data))) {
      sendProblem(res, { status: 404, code: 'LINK_NOT_FOUND', title: 'Not Found', detail: `no link ${linkId.data}` });
      return;
    }
    res.json(await linkView(deps.database, linkId.data));
  });

  return router;
}
