// The two profile keys issued at onboarding, as JWKs: the partner's private RSA key (decrypts the
// profile JWE) and the shared secret (verifies the inner HS256 JWS). Shared by config and client.
import { z } from 'zod';

export const profileDecryptionJwkSchema = z.looseObject({
  kty: z.literal('RSA', 'must be an RSA JWK (kty "RSA")'),
  n: z.string().min(1),
  e: z.string().min(1),
  d: z.string('must be a private RSA JWK (with "d")').min(1),
  p: z.string().optional(),
  q: z.string().optional(),
  dp: z.string().optional(),
  dq: z.string().optional(),
  qi: z.string().optional(),
});
export type ProfileDecryptionJwk = z.infer<typeof profileDecryptionJwkSchema>;

export const profileVerificationJwkSchema = z.looseObject({
  kty: z.literal('oct', 'must be a secret JWK (kty "oct")'),
  k: z.string().min(1),
});
export type ProfileVerificationJwk = z.infer<typeof profileVerificationJwkSchema>;
