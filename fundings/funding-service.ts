// Fundings as a service shared by the ops API and the landing page: start one (idempotent on its
// key: one funding and one workflow per key), read it, cancel it before it executes.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Prisma } from '../generated/prisma/client.ts';
import {
  cancellableFundingStatuses,
  fundingErrorMessage,
  isFinalFundingStatus,
  maskCashInCode,
  type CreateFundingRequest,
  type FundingView,
} from '../domain/funding.ts';
import { normaliseAmount } from '../domain/money.ts';
import { searchAttributes } from '../domain/search-attributes.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { TokenCipher } from '../links/token-cipher.ts';
import { fundingView } from './funding-view.ts';
import { requestFingerprint, startWorkflowOnce, workflowIdFor } from '../lib/idempotency.ts';

export interface FundingServiceDependencies {
  database: Database;
  temporal: Client;
  taskQueue: string;
  cipher: TokenCipher;
  /** HMAC key for request fingerprints (a cash-in code is never stored or hashed bare). */
  fingerprintKey: Buffer;
  logger: Logger;
  /** Counts fundings cancelled here (FAILED) among the finished ones; absent: not counted. */
  metrics?: Pick<Metrics, 'fundingFinished'>;
}

export type StartFundingResult =
  | { kind: 'created'; funding: FundingView }
  | { kind: 'existing'; funding: FundingView }
  | { kind: 'key-reused' }
  | { kind: 'link-not-found' };

export type CancelFundingResult = { kind: 'cancelled'; funding: FundingView } | { kind: 'not-found' } | { kind: 'not-cancellable'; status: string };

/** Must match activities/funding.ts. */
/** What a cash-in code is bound to when encrypted (the activities and rotate-keys open it). */
export const cashInCodeContext = (fundingId: string) => `funding:${fundingId}:cash_in_code`;

export const withFundingEvents = { events: { orderBy: { id: 'asc' as const } } };

export function createFundingService(deps: FundingServiceDependencies) {
  const fingerprint = (body: CreateFundingRequest) => {
    const amount = normaliseAmount(body.amount);
    return requestFingerprint(
      deps.fingerprintKey,
      body.recipient.type === 'CODE'
        ? ['CODE', body.recipient.code, amount.currency, amount.value]
        : ['TOKEN', body.recipient.linkId.toLowerCase(), amount.currency, amount.value],
    );
  };

  const startWorkflow = (fundingId: string, workflowId: string, recipientType: 'CODE' | 'TOKEN') =>
    startWorkflowOnce(deps.temporal, {
      workflowType: 'fundWallet',
      workflowId,
      taskQueue: deps.taskQueue,
      args: [{ fundingId }],
      searchAttributes: {
        [searchAttributes.status.name]: ['PENDING'],
        [searchAttributes.kind.name]: ['FUNDING'],
        [searchAttributes.recipientType.name]: [recipientType],
      },
    });

  const view = async (fundingId: string) => {
    const funding = await deps.database.funding.findUnique({ where: { id: fundingId }, include: withFundingEvents });
    return funding ? fundingView(funding) : null;
  };

  return {
    view,

    /** Validated input only (createFundingSchema, idempotencyKeySchema). */
    async start(idempotencyKey: string, body: CreateFundingRequest, actor?: string): Promise<StartFundingResult> {
      const requestFingerprint = fingerprint(body);
      const workflowId = workflowIdFor('funding', idempotencyKey);
      if (body.recipient.type === 'TOKEN') {
        const link = await deps.database.link.findUnique({ where: { id: body.recipient.linkId }, select: { status: true } });
        if (!link) return { kind: 'link-not-found' };
      }
      const fundingId = randomUUID();
      const amount = normaliseAmount(body.amount);
      const recipient = body.recipient;
      // One funding per key: a concurrent request with the same key waits on the unique index and
      // then finds this row.
      const inserted = await deps.database.$transaction(async (tx) => {
        const count = await tx.$executeRaw`
          INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, link_id,
                               cash_in_code_encrypted, cash_in_code_masked, currency, amount, abandoned_transfer_ids, updated_at)
          VALUES (${fundingId}::uuid, ${idempotencyKey}, ${requestFingerprint}, ${workflowId}, 'PENDING'::"FundingStatus",
                  ${recipient.type}::"RecipientType", ${recipient.type === 'TOKEN' ? recipient.linkId : null}::uuid,
                  ${recipient.type === 'CODE' ? Buffer.from(deps.cipher.encrypt(recipient.code, cashInCodeContext(fundingId))) : null},
                  ${recipient.type === 'CODE' ? maskCashInCode(recipient.code) : null}, ${amount.currency},
                  ${new Prisma.Decimal(amount.value)}, ARRAY[]::text[], now())
          ON CONFLICT (idempotency_key) DO NOTHING`;
        if (count === 1) await tx.fundingEvent.create({ data: { fundingId, status: 'PENDING', detail: actor ? `funding requested by ops key ${actor}` : 'funding requested' } });
        return count;
      });
      if (inserted === 1) {
        await startWorkflow(fundingId, workflowId, recipient.type);
        deps.logger.info({ fundingId, workflowId, recipientType: recipient.type }, 'funding started');
        return { kind: 'created', funding: (await view(fundingId))! };
      }
      const existing = await deps.database.funding.findUniqueOrThrow({ where: { idempotencyKey }, include: withFundingEvents });
      if (existing.requestFingerprint !== requestFingerprint) return { kind: 'key-reused' };
      // The first request may have stored the funding and died before starting its workflow.
      if (!isFinalFundingStatus(existing.status)) await startWorkflow(existing.id, existing.workflowId, existing.recipientType);
      return { kind: 'existing', funding: fundingView(existing) };
    },

    /** `actor`: the ops key's name (recorded in the funding's events). */
    async cancel(fundingId: string, actor?: string): Promise<CancelFundingResult> {
      const funding = await deps.database.funding.findUnique({ where: { id: fundingId } });
      if (!funding) return { kind: 'not-found' };
      // The database decides the race with the workflow's beginExecute: only one of them wins.
      const cancelled = await deps.database.$transaction(async (tx) => {
        const updated = await tx.funding.updateMany({
          where: { id: funding.id, status: { in: [...cancellableFundingStatuses] }, cancelRequested: false },
          data: { cancelRequested: true, status: 'FAILED', errorCode: 'CANCELLED', errorMessage: fundingErrorMessage('CANCELLED') },
        });
        if (updated.count === 1) await tx.fundingEvent.create({ data: { fundingId: funding.id, status: 'FAILED', detail: actor ? `cancelled by ops key ${actor}` : 'cancelled by ops' } });
        return updated.count === 1;
      });
      if (!cancelled) return { kind: 'not-cancellable', status: (await view(funding.id))?.status ?? funding.status };
      deps.metrics?.fundingFinished('FAILED', funding.createdAt);
      await deps.temporal.workflow
        .getHandle(funding.workflowId)
        .signal('cancelled')
        .catch((error: Error) => deps.logger.warn({ fundingId: funding.id, err: error.message }, 'could not nudge the workflow after cancel'));
      return { kind: 'cancelled', funding: (await view(funding.id))! };
    },
  };
}

export type FundingService = ReturnType<typeof createFundingService>;
