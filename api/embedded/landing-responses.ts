// How the landing page answers: an HTML page under its own nonce CSP, or the status polls' JSON;
// never cached, never sending a referrer, never sniffed.
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';
import { jsonAnswer, named, retryAfterHeader } from '../http/route-spec.ts';
import { landingCsp, messagePage, type MessagePage } from './landing-pages.ts';
import { appJsonErrorSchema, type AppJson } from './landing-json.ts';

/** The headers of every answer under /app; with a nonce, the page's CSP. */
export function securityHeaders(res: Response, nonce?: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (nonce) res.setHeader('Content-Security-Policy', landingCsp(nonce));
}

/** A page, rendered with a fresh nonce for its scripts. */
export function sendPage(res: Response, status: number, render: (nonce: string) => string): void {
  const nonce = randomBytes(16).toString('base64');
  securityHeaders(res, nonce);
  res.status(status).type('html').send(render(nonce));
}

/** A page that only says something (a refusal, an error; landing-messages.ts). */
export const sendMessage = (res: Response, status: number, content: MessagePage): void =>
  sendPage(res, status, (nonce) => messagePage(nonce, content));

export function sendJson(res: Response, status: number, body: AppJson): void {
  securityHeaders(res);
  res.status(status).json(body);
}

// ---- the same, as the routes declare their answers -----------------------------------------

export const appJsonErrorComponent = named('AppJsonError', appJsonErrorSchema);
export const noSessionJsonAnswer = jsonAnswer(appJsonErrorComponent, 'no web session (`NO_SESSION`)');
export const rateLimitedPollAnswer = jsonAnswer(
  appJsonErrorComponent,
  'too many requests from this address (`RATE_LIMITED`)',
  { 'Retry-After': retryAfterHeader },
);

/** A poll the database could not answer now (too many at once, or its connection lost): asked again later. */
export const busyPollAnswer = jsonAnswer(
  appJsonErrorComponent,
  'the database could not answer now (`OVERLOADED`: too many requests at once, or its connection lost)',
  { 'Retry-After': retryAfterHeader },
);
