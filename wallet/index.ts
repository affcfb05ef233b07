// The wallet client's public surface: the factory, its configuration, results and errors.
export { createWalletClient } from './client.ts';
export type { WalletClient } from './client.ts';
export { walletClientConfigSchema } from './config.ts';
export type { WalletClientConfig } from './config.ts';
export type { CallStartHook, WalletCallRecord, WalletCallStart } from './call-record.ts';
export {
  CallNotSent,
  MAX_RETRY_AFTER_MS,
  MIN_RETRY_AFTER_MS,
  WalletError,
  isCredentialsRefusal,
  isUnreadableAnswer,
  isWalletError,
  retryDelayOf,
  transportCodes,
} from './errors.ts';
export type { WalletOperation, WalletService } from './operations.ts';
export { isConflictOf, isPaymentExecuteRefusal, outcomeOf, outcomeTable } from './outcome.ts';
export type { ConflictCode, FailureCondition, WalletOutcome } from './outcome.ts';
export type { WalletResult } from './transport.ts';
export type { UserTokens } from './connect.ts';
export type { ClientToken } from './client-token.ts';
export type { EmbeddedTokens, Payment } from './op.ts';
export type { Profile } from './profile-schema.ts';
export type { Transfer, TransferRecipient, TransferStatus } from './transfers.ts';
export { profileByScope, profileByScopeSchema, profileScopes, scopesOf } from './profile-scopes.ts';
export type { ProfileByScope, ProfileScope } from './profile-scopes.ts';
