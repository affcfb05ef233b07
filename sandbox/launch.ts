// Opening the partner's tile as the wallet app does: mint embedded tokens, POST them to the
// partner's session URL from the registered sender address, and build the landing page URL.
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import type { SandboxContext } from './context.ts';
import type { SandboxUser } from './state.ts';
import { issueEmbeddedTokens } from './tokens.ts';

const sessionCallTimeoutMs = 10_000;
const sessionIdPattern = /^[A-Za-z0-9._~-]{1,255}$/;

export type LaunchResult =
  { ok: true; sessionId: string; landingUrl: string } | { ok: false; partnerStatus: number | null; message: string };

/** One connection pool bound to the sender address, as the partner's allowlist expects. */
export function createSenderAgent(senderIp: string): Agent {
  // undici takes the source address as the client's `localAddress` option: a `connect.localAddress`
  // would be overridden by it. 0.0.0.0 (or ::) lets the system choose, as in a container whose
  // address is not known in advance.
  const unbound = senderIp === '0.0.0.0' || senderIp === '::';
  return new Agent({ ...(unbound ? {} : { localAddress: senderIp }), connect: { timeout: sessionCallTimeoutMs } });
}

export async function launchPartnerSession(
  context: SandboxContext,
  user: SandboxUser,
  agent: Agent,
): Promise<LaunchResult> {
  const { registration } = context;
  const tokens = issueEmbeddedTokens(context, user.userId);
  let status: number;
  let text: string;
  try {
    const response = await request(registration.sessionUrl, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', accept: 'application/json', 'request-reference-no': randomUUID() },
      body: JSON.stringify(tokens),
      headersTimeout: sessionCallTimeoutMs,
      bodyTimeout: sessionCallTimeoutMs,
      signal: context.faultContext.shutdown,
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, partnerStatus: null, message: `could not reach the session URL: ${reason}` };
  }
  if (status < 200 || status > 299)
    return { ok: false, partnerStatus: status, message: `the session URL answered ${status}` };
  let sessionId: unknown;
  try {
    sessionId = (JSON.parse(text) as { sessionId?: unknown }).sessionId;
  } catch {
    return { ok: false, partnerStatus: status, message: 'the session URL answered a body that is not JSON' };
  }
  if (typeof sessionId !== 'string' || !sessionIdPattern.test(sessionId)) {
    return {
      ok: false,
      partnerStatus: status,
      message: 'the session URL answered no valid sessionId (URL-safe, at most 255 characters)',
    };
  }
  const landingUrl = new URL(registration.landingUrl);
  landingUrl.searchParams.set('sessionId', sessionId);
  return { ok: true, sessionId, landingUrl: landingUrl.toString() };
}
