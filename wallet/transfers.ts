// The transfer service: create an intent (no money moves), execute it once, retrieve it. HTTP
// Basic with the API key as user name and an empty password (contract-decisions section 2).
import { z } from 'zod';
import type { Amount } from '../domain/money.ts';
import type { WalletOperation } from './operations.ts';
import type { WalletResult, WalletTransport } from './transport.ts';
import { parseWith, UnusableResponseError } from './transport.ts';
import { toWireAmount, wireAmountSchema } from './wire-amount.ts';

export const transferStatusSchema = z.enum(['CREATED', 'PROCESSING', 'APPROVED', 'DECLINED', 'EXPIRED']);
export type TransferStatus = z.infer<typeof transferStatusSchema>;

const transferRecordSchema = z.object({
  transferId: z.string().min(1),
  status: transferStatusSchema,
  recipient: z.object({
    type: z.enum(['TOKEN', 'CODE']),
    /** Masked by the service: last 4 characters only. */
    value: z.string(),
  }),
  amount: wireAmountSchema,
  requestReferenceNumber: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  decline: z.object({ code: z.string(), message: z.string() }).nullable(),
});

export type Transfer = z.output<typeof transferRecordSchema>;

export type TransferRecipient = { type: 'TOKEN'; value: string } | { type: 'CODE'; value: string };

export interface TransferSettings {
  transferUrl: string;
  transferApiKey: string;
}

export interface TransferCalls {
  createTransfer(input: { recipient: TransferRecipient; amount: Amount }): Promise<WalletResult<Transfer>>;
  executeTransfer(transferId: string): Promise<WalletResult<Transfer>>;
  retrieveTransfer(transferId: string): Promise<WalletResult<Transfer>>;
}

export function createTransferCalls(settings: TransferSettings, transport: WalletTransport): TransferCalls {
  const basic = `Basic ${Buffer.from(`${settings.transferApiKey}:`).toString('base64')}`;
  const parse = parseWith(transferRecordSchema);

  /**
   * An execute or retrieve answer must be about the transfer asked for: another
   * transfer's record is no answer at all (outcome unknown: a read is asked again).
   */
  const about = (transferId: string) => (body: unknown) => {
    const transfer = parse(body);
    if (transfer.transferId !== transferId) {
      throw new UnusableResponseError(
        'TRANSFER_MISMATCH',
        'unknown',
        'the answer is about another transfer than the one asked for',
        true,
      );
    }
    return transfer;
  };

  const send = (
    operation: WalletOperation,
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: { json: unknown; secrets: string[] },
    parseAnswer: (body: unknown) => Transfer = parse,
  ) =>
    transport.send<Transfer>({
      operation,
      method,
      baseUrl: settings.transferUrl,
      path,
      headers: {
        accept: 'application/json',
        authorization: basic,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body.json) }),
      secrets: [settings.transferApiKey, basic, ...(body?.secrets ?? [])],
      parse: parseAnswer,
    });

  const transferPath = (transferId: string) => `/transfers/${encodeURIComponent(transferId)}`;

  return {
    async createTransfer({ recipient, amount }) {
      const wireAmount = toWireAmount(amount, 'transfers.create');
      return send('transfers.create', 'POST', '/transfers', {
        json: { recipient: { type: recipient.type, value: recipient.value }, amount: wireAmount },
        secrets: [recipient.value],
      });
    },
    executeTransfer(transferId) {
      return send('transfers.execute', 'PUT', `${transferPath(transferId)}/execute`, undefined, about(transferId));
    },
    retrieveTransfer(transferId) {
      return send('transfers.retrieve', 'GET', transferPath(transferId), undefined, about(transferId));
    },
  };
}
