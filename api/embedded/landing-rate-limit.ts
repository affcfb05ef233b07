// The landing page's rate limits: a status poll of a live web session counts against that
// session's own budget (many users behind one carrier NAT share an address); anything else (pages,
// forms, polls without a live session: a forged cookie buys nothing) against the client address.
import type { RequestHandler } from 'express';
import type { RateLimiter, RateVerdict } from '../http/rate-limit.ts';
import type { LandingContext } from './landing-context.ts';
import { messagePages } from './landing-messages.ts';
import { sendJson, sendMessage } from './landing-responses.ts';

/** The pages' own JSON polls (assets/loading.js, home.js, progress.js). */
const statusPollPath = /^\/app\/(status|activity|(withdrawals|deposits)\/[^/]+\/status)$/;
export const isStatusPoll = (path: string): boolean => statusPollPath.test(path);

/** For use under /app: 429 with Retry-After past either budget, as JSON to the polls and a page to the rest. */
export function limitLandingRequests(
  { sessionOf }: LandingContext,
  addressLimiter: RateLimiter,
  pollLimiter: RateLimiter | undefined,
): RequestHandler {
  return async (req, res, next) => {
    try {
      let verdict: RateVerdict | undefined;
      if (pollLimiter && req.method === 'GET' && isStatusPoll(`${req.baseUrl}${req.path}`)) {
        const session = await sessionOf(req);
        if (session) verdict = pollLimiter.take(`web-session:${session.id}`);
      }
      verdict ??= addressLimiter.take(req.ip);
      if (verdict.allowed) {
        next();
        return;
      }
      res.setHeader('Retry-After', String(verdict.retryAfterSeconds));
      // The polls answer JSON; the pages, a page.
      if (req.path.endsWith('/status') || req.path === '/activity') {
        sendJson(res, 429, {
          code: 'RATE_LIMITED',
          message: `too many requests; retry after ${verdict.retryAfterSeconds} s`,
        });
      } else sendMessage(res, 429, messagePages.tooMany);
    } catch (error) {
      next(error);
    }
  };
}
