// The security headers of every response (helmet): a deny-all Content-Security-Policy that pages
// replace with their own nonce policy, no framing, sniffing or referrer; HSTS only over TLS.
import type { Request, RequestHandler, Response } from 'express';
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

/**
 * The headers `securityHeaders` sets on an answer that reached us over plain HTTP (or over TLS where `PUBLIC_URL` is
 * https), by name: for an answer written without Express (api/http/parser-refusals.ts), so that it carries exactly
 * what every other answer does.
 */
export function securityHeaderValues(options: SecurityHeaderOptions = {}): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => {
      headers[name] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name];
    },
    getHeader: (name: string) => headers[name],
  };
  for (const handler of securityHeaders(options))
    void handler({ secure: false, headers: {} } as Request, response as unknown as Response, () => undefined);
  return headers;
}
