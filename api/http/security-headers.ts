// The security headers of every response (helmet): a deny-all Content-Security-Policy that pages
// replace with their own nonce policy, no framing, sniffing or referrer; HSTS only over TLS.
import type { RequestHandler } from 'express';
import helmet from 'helmet';

/** One year, as browsers' preload lists expect; subdomains of the API's host are its own. */
export const HSTS_HEADER = 'max-age=31536000; includeSubDomains';

export interface SecurityHeaderOptions {
  /** PUBLIC_URL: an https URL means every answer reaches the browser over TLS (a TLS-ending proxy). */
  publicUrl?: string | undefined;
}

export function securityHeaders(options: SecurityHeaderOptions = {}): RequestHandler[] {
  const servedOverTls = options.publicUrl?.startsWith('https:') ?? false;
  return [
    helmet({
      // JSON answers, redirects and problem documents load nothing. The landing and connect pages
      // set their own policy (a per-response nonce for their one inline style and, on the landing
      // pages, their <script src> of a file in api/embedded/assets/), which replaces
      // this header rather than being weakened by it.
      contentSecurityPolicy: {
        useDefaults: false,
        directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"], frameAncestors: ["'none'"] },
      },
      // Set below, only when the browser reached us over TLS: HSTS over plain HTTP is meaningless,
      // and on a development host (http://127.0.0.1) it would be wrong.
      strictTransportSecurity: false,
      xFrameOptions: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    }),
    (req, res, next) => {
      // req.secure: TLS at this process, or X-Forwarded-Proto https from a trusted proxy.
      if (servedOverTls || req.secure) res.setHeader('Strict-Transport-Security', HSTS_HEADER);
      next();
    },
  ];
}
