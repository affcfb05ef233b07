// `npm run sandbox`: runs the sandbox wallet service alone, with the partner registration from
// SANDBOX_* variables or generated, and prints what a partner needs to point at it.
import { sandboxPortFrom, startSandbox } from './server.ts';
import { registrationFromEnv } from './registration.ts';
import { settingsFromEnv } from './settings.ts';
import { sandboxOtp } from './login-pages.ts';
import { defaultPassword } from './users.ts';

function seedFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.SANDBOX_SEED?.trim();
  if (raw === undefined || raw === '') return undefined;
  const seed = Number(raw);
  if (!Number.isInteger(seed)) throw new Error('SANDBOX_SEED must be an integer');
  return seed;
}

async function main(): Promise<void> {
  const env = process.env;
  const port = sandboxPortFrom(env);
  const seed = seedFromEnv(env);
  const sandbox = await startSandbox({
    port,
    host: env.SANDBOX_HOST?.trim() || '127.0.0.1',
    registration: registrationFromEnv(env),
    settings: settingsFromEnv(env),
    ...(seed === undefined ? {} : { seed }),
    logRequest: env.SANDBOX_QUIET ? undefined : (line) => console.log(`sandbox: ${line}`),
  });
  const { partner } = sandbox;
  // The registration is printed on purpose: it is what onboarding hands the partner.
  console.log(`Wallet service sandbox on ${sandbox.url}

  CONNECT_URL=${sandbox.connectUrl}
  OP_URL=${sandbox.opUrl}
  TRANSFER_URL=${sandbox.transferUrl}
  CONNECT_CLIENT_ID=${partner.clientId}
  CONNECT_CLIENT_SECRET=${partner.clientSecret}
  CONNECT_REDIRECT_URI=${partner.redirectUri}
  TRANSFER_API_KEY=${partner.transferApiKey}
  MERCHANT_P2M_ID=${partner.p2mId}
  SESSION_ALLOWED_IPS=${partner.senderIp}
  PROFILE_DECRYPTION_JWK=${JSON.stringify(partner.profileDecryptionJwk)}
  PROFILE_VERIFICATION_JWK=${JSON.stringify(partner.profileVerificationJwk)}

  session URL called: ${partner.sessionUrl}   landing page: ${partner.landingUrl}   scopes: ${partner.scopes.join(' ')}
  registration as JSON: ${sandbox.url}/_sandbox/partner
  index: ${sandbox.url}/_sandbox/   launcher: ${sandbox.url}/_sandbox/launcher
  login OTP for every user: ${sandboxOtp}; default password: ${defaultPassword}
`);
  const stop = () => {
    void sandbox.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`sandbox: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
