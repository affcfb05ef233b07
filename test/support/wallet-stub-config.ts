// A wallet client configuration pointing all three services at one stub server, for unit tests.
import type { WalletClientConfig } from '../../wallet/index.ts';
import { generateProfileTestKeys } from './wallet-profile-jwe.ts';
import type { ProfileTestKeys } from './wallet-profile-jwe.ts';

export const stubSecrets = {
  clientId: 'partner-client',
  clientSecret: 'client-secret-value-1234',
  transferApiKey: 'transfer-api-key-value-5678',
  p2mId: 'p2m-0001',
};

let sharedKeys: ProfileTestKeys | undefined;
/** RSA key generation is slow: one pair serves all stub clients. */
export function stubProfileKeys(): ProfileTestKeys {
  sharedKeys ??= generateProfileTestKeys();
  return sharedKeys;
}

export function stubClientConfig(url: string, overrides: Partial<WalletClientConfig> = {}): WalletClientConfig {
  const keys = stubProfileKeys();
  return {
    connectUrl: `${url}/connect`,
    opUrl: `${url}/op`,
    transferUrl: `${url}/v1`,
    redirectUri: 'https://partner.example/connect/callback',
    profileDecryptionJwk: keys.decryptionJwk,
    profileVerificationJwk: keys.verificationJwk,
    timeoutMs: 2_000,
    ...stubSecrets,
    ...overrides,
  };
}
