// Pre-signed identity document image URLs: valid 15 minutes on the sandbox clock, like the
// operator's pre-signed storage URLs, and the route that serves (or refuses) them.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Router, type Request } from 'express';
import { epochSeconds } from './clock.ts';
import type { SandboxContext } from './context.ts';
import { escapeHtml } from '../lib/html.ts';
import { lifetimes } from './lifetimes.ts';

type Side = 'front' | 'back';

function signature(context: SandboxContext, documentId: string, side: string, expires: string): Buffer {
  return createHmac('sha256', context.keys.documents).update(`${documentId}:${side}:${expires}`).digest();
}

/** The sandbox's address as the caller reached it, so the URLs work behind any host name. */
export function requestBaseUrl(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

export function documentUrlBuilder(
  context: SandboxContext,
  baseUrl: string,
): (documentId: string, side: Side) => string {
  const expires = String(epochSeconds(context.clock.now()) + lifetimes.identityDocumentUrl);
  return (documentId, side) => {
    const sig = signature(context, documentId, side, expires).toString('base64url');
    return `${baseUrl}/_sandbox/documents/${encodeURIComponent(documentId)}/${side}?expires=${expires}&sig=${sig}`;
  };
}

function findDocument(context: SandboxContext, documentId: string): { type: string; holder: string } | null {
  for (const user of context.state.users.values()) {
    const document = user.profile.identityDocument.find((candidate) => candidate.documentId === documentId);
    if (document)
      return { type: document.type, holder: `${user.profile.name.firstName} ${user.profile.name.lastName}` };
  }
  return null;
}

export function documentsRouter(context: SandboxContext): Router {
  const router = Router();
  router.get('/documents/:documentId/:side', (req, res) => {
    const { documentId, side } = req.params;
    const expires = typeof req.query.expires === 'string' ? req.query.expires : '';
    const sig = typeof req.query.sig === 'string' ? Buffer.from(req.query.sig, 'base64url') : Buffer.alloc(0);
    const expected = signature(context, documentId, side, expires);
    if ((side !== 'front' && side !== 'back') || sig.length !== expected.length || !timingSafeEqual(sig, expected)) {
      res.status(403).type('text/plain').send('AccessDenied: signature does not match');
      return;
    }
    if (!/^\d+$/.test(expires) || Number(expires) * 1000 <= context.clock.now()) {
      res.status(403).type('text/plain').send('AccessDenied: request has expired');
      return;
    }
    const document = findDocument(context, documentId);
    if (!document) {
      res.status(404).type('text/plain').send('NoSuchKey');
      return;
    }
    const label = escapeHtml(`${document.type} (${side}) of ${document.holder}`);
    res
      .type('image/svg+xml')
      .set('Cache-Control', 'no-store')
      .send(
        `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="200"><rect width="320" height="200" rx="12" fill="#dde6f0"/>` +
          `<text x="20" y="100" font-family="sans-serif" font-size="14">${label}</text></svg>`,
      );
  });
  return router;
}
