// createWalletClient: one typed function per call of the wallet service interface, sharing one
// transport (keep-alive, time-outs, request references, audit hook) and one client-token cache.
import type { WalletClientConfig } from './config.ts';
import { walletClientConfigSchema } from './config.ts';
import { createClientTokenCache } from './client-token.ts';
import type { ConnectCalls } from './connect.ts';
import { createConnectCalls } from './connect.ts';
import type { OpCalls } from './op.ts';
import { createOpCalls } from './op.ts';
import { createProfileReader } from './profile.ts';
import type { TransferCalls } from './transfers.ts';
import { createTransferCalls } from './transfers.ts';
import { createWalletTransport } from './transport.ts';

export interface WalletClient extends ConnectCalls, OpCalls, TransferCalls {
  /** Closes the keep-alive connections. */
  close(): Promise<void>;
}

export function createWalletClient(input: WalletClientConfig): WalletClient {
  const config = walletClientConfigSchema.parse(input);
  const now = config.now ?? Date.now;
  const transport = createWalletTransport({
    timeoutMs: config.timeoutMs,
    now,
    ...(config.onCall ? { onCall: config.onCall } : {}),
    ...(config.onAuditError ? { onAuditError: config.onAuditError } : {}),
    ...(config.onCallStart ? { onCallStart: config.onCallStart } : {}),
  });
  const connect = createConnectCalls({ ...config, now }, transport);
  const clientTokens = createClientTokenCache({
    now,
    fetchToken: async () => (await connect.clientCredentials()).data,
  });
  const profiles = createProfileReader({
    decryptionJwk: config.profileDecryptionJwk,
    verificationJwk: config.profileVerificationJwk,
  });
  return {
    ...connect,
    ...createOpCalls(config, transport, clientTokens, profiles),
    ...createTransferCalls(config, transport),
    close: () => transport.close(),
  };
}
