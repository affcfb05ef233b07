// The partner registration the sandbox accepts (what onboarding hands a partner): from SANDBOX_*
// variables, from options, or generated with fresh credentials and keys.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  randomInt,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';

export const allScopes = ['openid', 'profile', 'contact', 'address', 'workDetails', 'identity_document'] as const;
export type Scope = (typeof allScopes)[number];

/** Exactly what `GET /_sandbox/partner` answers (contract-decisions section 9). */
export interface PartnerRegistration {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  transferApiKey: string;
  p2mId: string;
  /** The partner's PRIVATE RSA JWK: the partner decrypts profile data with it. */
  profileDecryptionJwk: Record<string, unknown>;
  /** The shared secret JWK (`kty: oct`) the inner profile JWS is signed with. */
  profileVerificationJwk: Record<string, unknown>;
  sessionUrl: string;
  landingUrl: string;
  senderIp: string;
  scopes: string[];
}

export const registrationDefaults = {
  redirectUri: 'http://127.0.0.1:3000/connect/callback',
  sessionUrl: 'http://127.0.0.1:3000/embedded/session',
  landingUrl: 'http://127.0.0.1:3000/app',
  senderIp: '127.0.0.1',
} as const;

const rsaPrivateJwkSchema = z.looseObject({
  kty: z.literal('RSA'),
  n: z.string(),
  e: z.string(),
  d: z.string({ error: 'the profile decryption JWK must be the PRIVATE RSA key (field d missing)' }),
});
const octJwkSchema = z.looseObject({ kty: z.literal('oct'), k: z.string().min(1) });

/** The registration plus the keys the sandbox derives from it. */
export interface RegistrationKeys {
  registration: PartnerRegistration;
  /** Public half of the partner's RSA key: profile data is encrypted to it. */
  profileEncryptionKey: KeyObject;
}

function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

function generateProfileKeyPair(): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `sandbox-profile-${randomToken(6)}` };
}

/**
 * Fills what `partial` leaves out with generated values and checks the keys. Throws a message
 * naming the bad field, because start-up should stop on a bad registration.
 */
export function completeRegistration(partial: Partial<PartnerRegistration> = {}): RegistrationKeys {
  const registration: PartnerRegistration = {
    clientId: partial.clientId ?? `sandbox-client-${randomToken(6)}`,
    clientSecret: partial.clientSecret ?? randomToken(32),
    redirectUri: partial.redirectUri ?? registrationDefaults.redirectUri,
    transferApiKey: partial.transferApiKey ?? randomToken(24),
    p2mId: partial.p2mId ?? `P2M${String(randomInt(1_000_000_000)).padStart(9, '0')}`,
    profileDecryptionJwk: partial.profileDecryptionJwk ?? generateProfileKeyPair(),
    profileVerificationJwk: partial.profileVerificationJwk ?? { kty: 'oct', k: randomToken(32) },
    sessionUrl: partial.sessionUrl ?? registrationDefaults.sessionUrl,
    landingUrl: partial.landingUrl ?? registrationDefaults.landingUrl,
    senderIp: partial.senderIp ?? registrationDefaults.senderIp,
    scopes: partial.scopes ?? [...allScopes],
  };
  const rsa = rsaPrivateJwkSchema.safeParse(registration.profileDecryptionJwk);
  if (!rsa.success)
    throw new Error(`profileDecryptionJwk: ${rsa.error.issues[0]?.message ?? 'not an RSA private JWK'}`);
  if (!octJwkSchema.safeParse(registration.profileVerificationJwk).success) {
    throw new Error('profileVerificationJwk: must be a secret JWK with kty "oct" and k');
  }
  const unknownScope = registration.scopes.find((scope) => !(allScopes as readonly string[]).includes(scope));
  if (unknownScope !== undefined) throw new Error(`scopes: unknown scope ${unknownScope}`);
  // openid is the default scope (interface): the profile always carries id, profileId, kycStatus.
  if (!registration.scopes.includes('openid')) registration.scopes = ['openid', ...registration.scopes];
  for (const field of ['redirectUri', 'sessionUrl', 'landingUrl'] as const) {
    if (!URL.canParse(registration[field])) throw new Error(`${field}: not a URL`);
  }
  if (isIP(registration.senderIp) === 0) throw new Error('senderIp: not an IP address');
  const privateKey = createPrivateKey({ key: rsa.data as JsonWebKey, format: 'jwk' });
  return { registration, profileEncryptionKey: createPublicKey(privateKey) };
}

function parseJsonVariable(name: string, value: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch {
    throw new Error(`${name} must be a JSON object (a JWK)`);
  }
}

/** The parts of the registration given by SANDBOX_* variables; the rest is generated. */
export function registrationFromEnv(env: NodeJS.ProcessEnv): Partial<PartnerRegistration> {
  const partial: Partial<PartnerRegistration> = {};
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const assign = <K extends keyof PartnerRegistration>(key: K, value: PartnerRegistration[K] | undefined): void => {
    if (value !== undefined) partial[key] = value;
  };
  assign('clientId', text('SANDBOX_CLIENT_ID'));
  assign('clientSecret', text('SANDBOX_CLIENT_SECRET'));
  assign('redirectUri', text('SANDBOX_REDIRECT_URI'));
  assign('transferApiKey', text('SANDBOX_TRANSFER_API_KEY'));
  assign('p2mId', text('SANDBOX_P2M_ID'));
  assign('sessionUrl', text('SANDBOX_SESSION_URL'));
  assign('landingUrl', text('SANDBOX_LANDING_URL'));
  assign('senderIp', text('SANDBOX_SENDER_IP'));
  const decryption = text('SANDBOX_PROFILE_DECRYPTION_JWK');
  if (decryption !== undefined)
    partial.profileDecryptionJwk = parseJsonVariable('SANDBOX_PROFILE_DECRYPTION_JWK', decryption);
  const verification = text('SANDBOX_PROFILE_VERIFICATION_JWK');
  if (verification !== undefined) {
    partial.profileVerificationJwk = parseJsonVariable('SANDBOX_PROFILE_VERIFICATION_JWK', verification);
  }
  const scopes = text('SANDBOX_SCOPES');
  if (scopes !== undefined) partial.scopes = scopes.split(/[\s,]+/).filter((scope) => scope !== '');
  return partial;
}
