// The sandbox's whole in-memory state: users, tokens, codes, transfers, payments and the refresh
// log, plus the run's settings. Amounts are decimal strings (domain/money.ts).
import type { WalletAmount } from './amounts.ts';
import type { FaultConfiguration } from './faults.ts';
import type { StoredProfile } from './profiles.ts';

export type KycLevel = 'KYC0' | 'KYC1';
export type TokenKind = 'standalone' | 'embedded';

export interface SandboxUser {
  userId: string;
  /** Numeric string: the interface's "unique numeric system identifier". */
  profileId: string;
  mobile: string;
  password: string;
  kycLevel: KycLevel;
  balance: string;
  /** Balance cap: a credit beyond it is declined 6001. */
  walletLimit: string;
  /** A blocked account is declined 6002 at transfer execution. */
  blocked: boolean;
  /** The partner's own wallet account: a transfer to it is refused 1096 (sender = recipient). */
  isPartnerAccount: boolean;
  profile: StoredProfile;
  createdAt: number;
}

export interface AccessTokenRecord {
  kind: TokenKind;
  userId: string;
  scopes: string[];
  expiresAt: number;
  revoked: boolean;
}

export interface RefreshTokenRecord {
  kind: TokenKind;
  userId: string;
  scopes: string[];
  expiresAt: number;
  revoked: boolean;
  /** The access token issued last from this refresh token; a refresh invalidates it. */
  accessToken: string;
}

export interface AuthorizationCodeRecord {
  userId: string;
  redirectUri: string;
  expiresAt: number;
  used: boolean;
  /** Tokens issued from the code: revoked if the code is presented again (RFC 6749 4.1.2). */
  issued: { accessToken: string; refreshToken: string } | null;
}

export interface CashInCodeRecord {
  code: string;
  userId: string;
  expiresAt: number;
  /** The transfer executing with this code; released when that transfer is declined. */
  reservedBy: string | null;
  /** The transfer that reached APPROVED with this code: the code is used up. */
  consumedBy: string | null;
}

export type TransferStatus = 'CREATED' | 'PROCESSING' | 'APPROVED' | 'DECLINED' | 'EXPIRED';

export interface TransferRecord {
  transferId: string;
  status: TransferStatus;
  recipientType: 'TOKEN' | 'CODE';
  /** Only the masked value is kept: the sandbox never stores a recipient token longer than needed. */
  maskedRecipient: string;
  recipientUserId: string;
  cashInCode: string | null;
  amount: WalletAmount;
  requestReferenceNumber: string;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
  /** When a PROCESSING transfer settles, sandbox time. */
  settleAt: number | null;
  decline: { code: string; message: string } | null;
  executions: number;
}

export type PaymentStatus = 'CREATED' | 'EXECUTED' | 'FAILED';

export interface PaymentRecord {
  paymentId: string;
  p2mId: string;
  userId: string;
  requestReferenceNumber: string;
  amount: WalletAmount;
  fee: WalletAmount;
  status: PaymentStatus;
  /** The failure an execute answered; every later execute answers it again. */
  failure: { httpStatus: number; code: string; message: string } | null;
  executions: number;
  createdAt: number;
}

export interface RefreshLogEntry {
  kind: TokenKind;
  userId: string;
  at: number;
}

export interface PendingLogin {
  loginId: string;
  redirectUri: string;
  state: string | undefined;
  /** The mobile from user_id, fixed for the whole flow; null when the page asks for it. */
  fixedMobile: string | null;
  mobile: string | null;
  mode: 'login' | 'register';
  step: 'credentials' | 'otp';
  /** Password chosen on the registration form; the account is created after the OTP. */
  newPassword: string | null;
  passwordFailures: number;
  otpFailures: number;
  expiresAt: number;
}

export interface SandboxSettings {
  /** How long an executed transfer stays PROCESSING; 0: execute answers the final state. */
  processingDelayMs: number;
  /** Time limit between transfer create and execute; null: none (the interface's today). */
  transferExpirySeconds: number | null;
  /** Fee added to every merchant payment, a decimal string in PHP. */
  merchantFee: string;
  /** The partner's funding wallet that transfers draw from; short of it, declines are 6051. */
  partnerFundingBalance: string;
  /**
   * Where the launcher reads each user's partner balance (sandbox/partner-balances.ts): the
   * partner's `GET …/ops/accounts/` URL and a read-only ops key for it. Never shown: the settings
   * API answers without the key, the launcher page shows balances only. null: no balances shown.
   */
  partnerBalances: PartnerBalancesSetting | null;
}

export interface PartnerBalancesSetting {
  /** The accounts URL the partner user id is appended to, e.g. http://127.0.0.1:3000/ops/accounts/. */
  accountsUrl: string;
  /** A read-only ops key (Authorization: Bearer …). */
  opsKey: string;
}

export const defaultSettings: SandboxSettings = {
  processingDelayMs: 0,
  transferExpirySeconds: null,
  merchantFee: '0.00',
  partnerFundingBalance: '1000000000.00',
  partnerBalances: null,
};

export interface SandboxState {
  users: Map<string, SandboxUser>;
  userIdByMobile: Map<string, string>;
  accessTokens: Map<string, AccessTokenRecord>;
  refreshTokens: Map<string, RefreshTokenRecord>;
  authorizationCodes: Map<string, AuthorizationCodeRecord>;
  cashInCodes: Map<string, CashInCodeRecord>;
  transfers: Map<string, TransferRecord>;
  /** Transfers still CREATED or PROCESSING: the ones that may expire or settle lazily. */
  openTransfers: Set<string>;
  payments: Map<string, PaymentRecord>;
  refreshes: RefreshLogEntry[];
  pendingLogins: Map<string, PendingLogin>;
  settings: SandboxSettings;
  faults: FaultConfiguration;
}

export function createState(initialSettings: SandboxSettings, faults: FaultConfiguration): SandboxState {
  return {
    users: new Map(),
    userIdByMobile: new Map(),
    accessTokens: new Map(),
    refreshTokens: new Map(),
    authorizationCodes: new Map(),
    cashInCodes: new Map(),
    transfers: new Map(),
    openTransfers: new Set(),
    payments: new Map(),
    refreshes: [],
    pendingLogins: new Map(),
    settings: { ...initialSettings },
    faults,
  };
}

/** Empties everything a run accumulates; the partner registration lives outside the state. */
export function clearState(state: SandboxState, initialSettings: SandboxSettings, faults: FaultConfiguration): void {
  state.users.clear();
  state.userIdByMobile.clear();
  state.accessTokens.clear();
  state.refreshTokens.clear();
  state.authorizationCodes.clear();
  state.cashInCodes.clear();
  state.transfers.clear();
  state.openTransfers.clear();
  state.payments.clear();
  state.refreshes.length = 0;
  state.pendingLogins.clear();
  state.settings = { ...initialSettings };
  state.faults = faults;
}
