// The calls the wallet client makes, the service each belongs to and what a call can change on
// the service's side; the outcome table (outcome.ts) decides retry versus reconcile from that.

export const walletOperations = {
  'connect.token.authorization_code': { service: 'connect', effect: 'code-exchange' },
  'connect.token.refresh_token': { service: 'connect', effect: 'standalone-refresh' },
  'connect.token.client_credentials': { service: 'connect', effect: 'read' },
  'op.tokens': { service: 'op', effect: 'rotation' },
  'op.profile': { service: 'op', effect: 'read' },
  'op.payments.create': { service: 'op', effect: 'create' },
  'op.payments.execute': { service: 'op', effect: 'execute' },
  'transfers.create': { service: 'transfers', effect: 'create' },
  'transfers.execute': { service: 'transfers', effect: 'execute' },
  'transfers.retrieve': { service: 'transfers', effect: 'read' },
} as const satisfies Record<string, { service: WalletService; effect: CallEffect }>;

/**
 * Operation names follow the sandbox's fault endpoint names (contract-decisions section 9); the
 * three grants of `connect.token` are told apart by a suffix because their outcomes differ.
 */
export type WalletOperation = keyof typeof walletOperations;
export type WalletService = 'connect' | 'op' | 'transfers';

/**
 * - read: changes nothing (transfers.retrieve, op.profile, client_credentials);
 * - create: makes an intent, moves no money, a repeat is harmless;
 * - execute: moves money, once;
 * - rotation: invalidates the previous embedded token pair;
 * - code-exchange: consumes a single-use authorization code;
 * - standalone-refresh: issues a new access token, the refresh token stays the same.
 */
export type CallEffect = 'read' | 'create' | 'execute' | 'rotation' | 'code-exchange' | 'standalone-refresh';

export function serviceOf(operation: WalletOperation): WalletService {
  return walletOperations[operation].service;
}

export function effectOf(operation: WalletOperation): CallEffect {
  return walletOperations[operation].effect;
}
