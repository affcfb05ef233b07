// The transfer service's rules: intents, one execution, PROCESSING that settles after the
// configured delay (lazily, on the sandbox clock), 60xx declines and optional intent expiry.
import { randomUUID } from 'node:crypto';
import { addPhp, comparePhp, subtractPhp, toWire, type WalletAmount } from './amounts.ts';
import { serviceError } from './answers.ts';
import type { SandboxContext } from './context.ts';
import type { TransferRecord } from './state.ts';
import { validUserAccessToken } from './tokens.ts';

export const declines = {
  walletLimit: { code: '6001', message: 'Recipient wallet limit reached' },
  blocked: { code: '6002', message: 'Recipient account is blocked' },
  partnerFunding: { code: '6051', message: 'Partner funding wallet has insufficient balance' },
  codeTaken: { code: '6003', message: 'Cash-in code already used by another transfer' },
} as const;

/** The last 4 characters only (contract-decisions section 2); at most 8 stars before them. */
export function maskRecipient(value: string): string {
  const hidden = Math.max(0, value.length - 4);
  return '*'.repeat(Math.min(hidden, 8)) + value.slice(-4);
}

export function transferView(record: TransferRecord) {
  return {
    transferId: record.transferId,
    status: record.status,
    recipient: { type: record.recipientType, value: record.maskedRecipient },
    amount: toWire(record.amount),
    requestReferenceNumber: record.requestReferenceNumber,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
    decline: record.decline,
  };
}

export interface CreateTransferInput {
  recipient: { type: 'TOKEN' | 'CODE'; value: string };
  amount: WalletAmount;
  requestReferenceNumber: string;
}

export function createTransfer(context: SandboxContext, input: CreateTransferInput): TransferRecord {
  const { state, clock } = context;
  const now = clock.now();
  let recipientUserId: string;
  let cashInCode: string | null = null;
  if (input.recipient.type === 'TOKEN') {
    const token = validUserAccessToken(context, input.recipient.value);
    if (!token) throw serviceError(401, 'UNAUTHORIZED', 'Recipient user access token is invalid, expired or revoked');
    recipientUserId = token.userId;
  } else {
    const code = state.cashInCodes.get(input.recipient.value);
    if (!code || code.consumedBy !== null || code.expiresAt <= now) {
      throw serviceError(400, 'CODE_INVALID', 'Cash-in code is unknown, used or expired');
    }
    recipientUserId = code.userId;
    cashInCode = code.code;
  }
  const recipient = state.users.get(recipientUserId);
  if (!recipient) throw serviceError(400, 'CODE_INVALID', 'Recipient account no longer exists');
  if (recipient.isPartnerAccount) throw serviceError(400, '1096', 'Sender and recipient are the same account');
  if (recipient.kycLevel !== 'KYC1') {
    throw serviceError(
      400,
      'M133',
      'Recipient wallet is not upgraded: ask the user to upgrade the account in the wallet app',
    );
  }
  const expirySeconds = state.settings.transferExpirySeconds;
  const record: TransferRecord = {
    transferId: randomUUID(),
    status: 'CREATED',
    recipientType: input.recipient.type,
    maskedRecipient: maskRecipient(input.recipient.value),
    recipientUserId,
    cashInCode,
    amount: input.amount,
    requestReferenceNumber: input.requestReferenceNumber,
    createdAt: now,
    updatedAt: now,
    expiresAt: expirySeconds === null ? null : now + expirySeconds * 1000,
    settleAt: null,
    decline: null,
    executions: 0,
  };
  state.transfers.set(record.transferId, record);
  state.openTransfers.add(record.transferId);
  return record;
}

/**
 * Transfers recorded as created and executed once (APPROVED, or DECLINED 6002), with nothing moved:
 * the wallet's side of a day of fundings a bench plants. Their ids, in order.
 */
export function plantExecutedTransfers(
  context: SandboxContext,
  input: { recipientUserId: string; amount: string; count: number; status: 'APPROVED' | 'DECLINED' },
): string[] {
  const now = context.clock.now();
  const ids: string[] = [];
  for (let index = 0; index < input.count; index += 1) {
    const record: TransferRecord = {
      transferId: randomUUID(),
      status: input.status,
      recipientType: 'CODE',
      maskedRecipient: maskRecipient('planted'),
      recipientUserId: input.recipientUserId,
      cashInCode: null,
      amount: { currency: 'PHP', value: input.amount },
      requestReferenceNumber: randomUUID(),
      createdAt: now,
      updatedAt: now,
      expiresAt: null,
      settleAt: null,
      decline: input.status === 'DECLINED' ? declines.blocked : null,
      executions: 1,
    };
    context.state.transfers.set(record.transferId, record);
    ids.push(record.transferId);
  }
  return ids;
}

export function requireTransfer(context: SandboxContext, transferId: string): TransferRecord {
  const record = context.state.transfers.get(transferId);
  if (!record) throw serviceError(404, 'TRANSFER_NOT_FOUND', 'No transfer with this id');
  return record;
}

/** Credits the recipient or declines; runs when the processing delay has passed. */
function settle(context: SandboxContext, record: TransferRecord, at: number): void {
  const { state } = context;
  const recipient = state.users.get(record.recipientUserId);
  const code = record.cashInCode === null ? undefined : state.cashInCodes.get(record.cashInCode);
  let decline: { code: string; message: string } | null = null;
  if (!recipient || recipient.blocked) decline = declines.blocked;
  else if (comparePhp(addPhp(recipient.balance, record.amount.value), recipient.walletLimit) > 0)
    decline = declines.walletLimit;
  else if (comparePhp(state.settings.partnerFundingBalance, record.amount.value) < 0) decline = declines.partnerFunding;
  if (decline !== null || !recipient) {
    record.status = 'DECLINED';
    record.decline = decline ?? declines.blocked;
    if (code && code.reservedBy === record.transferId) code.reservedBy = null;
  } else {
    recipient.balance = addPhp(recipient.balance, record.amount.value);
    state.settings.partnerFundingBalance = subtractPhp(state.settings.partnerFundingBalance, record.amount.value);
    record.status = 'APPROVED';
    // The code is used up when its transfer reaches APPROVED (contract-decisions section 3).
    if (code) code.consumedBy = record.transferId;
  }
  record.settleAt = null;
  record.updatedAt = at;
  state.openTransfers.delete(record.transferId);
}

/**
 * Brings open transfers up to the sandbox clock: PROCESSING ones whose delay has passed settle,
 * CREATED ones past their expiry become EXPIRED. Called before every request, so a retrieve, the
 * ledger and an advanced clock all see the state a timer would have produced.
 */
export function settleDueTransfers(context: SandboxContext): void {
  const now = context.clock.now();
  for (const transferId of context.state.openTransfers) {
    const record = context.state.transfers.get(transferId);
    if (!record) {
      context.state.openTransfers.delete(transferId);
      continue;
    }
    if (record.status === 'PROCESSING' && record.settleAt !== null && record.settleAt <= now)
      settle(context, record, record.settleAt);
    else if (record.status === 'CREATED' && record.expiresAt !== null && record.expiresAt <= now) {
      record.status = 'EXPIRED';
      record.updatedAt = record.expiresAt;
      context.state.openTransfers.delete(transferId);
    }
  }
}

/** PUT /transfers/{id}/execute: once; PROCESSING, then final now or after the delay. */
export function executeTransfer(context: SandboxContext, record: TransferRecord): TransferRecord {
  const { state, clock } = context;
  if (record.status === 'EXPIRED')
    throw serviceError(409, 'TRANSFER_EXPIRED', 'The transfer intent expired before execution');
  if (record.status !== 'CREATED')
    throw serviceError(409, 'TRANSFER_ALREADY_EXECUTED', 'The transfer was executed already');
  const now = clock.now();
  if (record.cashInCode !== null) {
    const code = state.cashInCodes.get(record.cashInCode);
    // Another transfer took the code meanwhile (it holds it while it executes, it used it up once
    // APPROVED): the credit cannot be made, and the execution is declined, 200 and DECLINED with its
    // 60xx code (contract-decisions section 2: CODE_INVALID is a create's; a declined execution is
    // not an HTTP error). Its expiry does not matter here: the code was valid when this intent was
    // created, and there is no time limit between create and execute.
    if (!code || code.consumedBy !== null || (code.reservedBy !== null && code.reservedBy !== record.transferId)) {
      record.status = 'DECLINED';
      record.decline = declines.codeTaken;
      record.executions += 1;
      record.updatedAt = now;
      record.settleAt = null;
      state.openTransfers.delete(record.transferId);
      return record;
    }
    code.reservedBy = record.transferId;
  }
  record.status = 'PROCESSING';
  record.executions += 1;
  record.updatedAt = now;
  record.settleAt = now + state.settings.processingDelayMs;
  if (state.settings.processingDelayMs === 0) settle(context, record, now);
  return record;
}
