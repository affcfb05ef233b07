// The built-in sandbox wired to walletflow, both ways, once for `walletflow dev`, the soak and
// bench harness and the tests: the partner endpoints the sandbox is registered to call on
// walletflow's API, and the sandbox's partner registration (what `GET /_sandbox/partner` answers)
// with its service URLs as walletflow's wallet variables (CONNECT_URL, …, lib/config.ts), and as
// the wallet client settings loadConfig reads from those variables, as the worker and API do.
//
// Why in stack/: the sandbox never imports partner code, and wallet/ (the production client)
// may not import the sandbox, nor should it carry wiring only development and tests use; the
// stack is what cli/, harness/ and test/ share, and it imports none of them.
import { loadConfig, type WalletServiceConfig, type walletServiceVariables } from '../lib/config.ts';
import type { PartnerRegistration, RunningSandbox } from '../sandbox/server.ts';

/** The sandbox as a wallet service: its three service URLs and its partner registration. */
export type SandboxWalletService = Pick<RunningSandbox, 'connectUrl' | 'opUrl' | 'transferUrl' | 'partner'>;

/** Where the sandbox calls walletflow's API at `apiBase`: the login redirect, the session URL, the landing page. */
export function partnerEndpoints(
  apiBase: string,
): Pick<PartnerRegistration, 'redirectUri' | 'sessionUrl' | 'landingUrl'> {
  return {
    redirectUri: `${apiBase}/connect/callback`,
    sessionUrl: `${apiBase}/embedded/session`,
    landingUrl: `${apiBase}/app`,
  };
}

/** Every wallet service variable of lib/config.ts, set for the sandbox. */
export function sandboxWalletVariables(
  sandbox: SandboxWalletService,
): Record<(typeof walletServiceVariables)[number], string> {
  const { partner } = sandbox;
  return {
    CONNECT_URL: sandbox.connectUrl,
    OP_URL: sandbox.opUrl,
    TRANSFER_URL: sandbox.transferUrl,
    CONNECT_CLIENT_ID: partner.clientId,
    CONNECT_CLIENT_SECRET: partner.clientSecret,
    CONNECT_REDIRECT_URI: partner.redirectUri,
    TRANSFER_API_KEY: partner.transferApiKey,
    PROFILE_DECRYPTION_JWK: JSON.stringify(partner.profileDecryptionJwk),
    PROFILE_VERIFICATION_JWK: JSON.stringify(partner.profileVerificationJwk),
    MERCHANT_P2M_ID: partner.p2mId,
  };
}

/**
 * The wallet client settings for the sandbox, read from its variables by loadConfig (so checked
 * as a process's would be); timeoutMs is WALLET_TIMEOUT_MS's default, for the caller to override.
 */
export function sandboxWalletConfig(sandbox: SandboxWalletService): WalletServiceConfig {
  const { wallet } = loadConfig(sandboxWalletVariables(sandbox));
  if (!wallet) throw new Error('the sandbox wallet variables did not make a wallet configuration');
  return wallet;
}
