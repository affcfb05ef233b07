// Payments as a service shared by the ops API and the landing page: start one (idempotent on its
// key), read it (by walletflow's id or the wallet's payment id, also once the wallet has named it),
// resolve one in NEEDS_REVIEW through the workflow's `resolve` update.
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { Prisma } from '../generated/prisma/client.ts';
import { isFinalPaymentStatus, type CreatePaymentRequest, type PaymentView, type ResolvePaymentRequest } from '../domain/payment.ts';
import { normaliseAmount } from '../domain/money.ts';
import { searchAttributes } from '../domain/search-attributes.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { paymentView } from './payment-view.ts';
import { requestFingerprint, startWorkflowOnce, workflowIdFor } from '../lib/idempotency.ts';

export interface PaymentServiceDependencies {
  database: Database;
  temporal: Client;
  taskQueue: string;
  fingerprintKey: Buffer;
  logger: Logger;
}

export type StartPaymentResult =
  | { kind: 'created'; payment: PaymentView }
  | { kind: 'existing'; payment: PaymentView }
  | { kind: 'key-reused' }
  | { kind: 'link-not-found' };

export type ResolvePaymentResult =
  | { kind: 'resolved'; payment: PaymentView }
  | { kind: 'not-found' }
  | { kind: 'not-in-review'; status: string };

export const withPaymentEvents = { events: { orderBy: { id: 'asc' as const } } };

/** The workflow's update name and argument (workflows/pay-wallet.ts). */
export const resolvePaymentUpdate = 'resolve';
export interface ResolvePaymentUpdateInput extends ResolvePaymentRequest {
  resolvedBy: string;
}

export function createPaymentService(deps: PaymentServiceDependencies) {
  const find = (id: string) =>
    deps.database.payment.findFirst({
      where: /^[0-9a-f-]{36}$/i.test(id) ? { OR: [{ id }, { walletPaymentId: id }] } : { walletPaymentId: id },
      include: withPaymentEvents,
    });

  const startWorkflow = (paymentId: string, workflowId: string) =>
    startWorkflowOnce(deps.temporal, {
      workflowType: 'payWallet',
      workflowId,
      taskQueue: deps.taskQueue,
      args: [{ paymentId }],
      searchAttributes: { [searchAttributes.status.name]: ['PENDING'], [searchAttributes.kind.name]: ['PAYMENT'] },
    });

  return {
    /** By walletflow's id, or by the wallet service's payment id. */
    async view(id: string): Promise<PaymentView | null> {
      const payment = await find(id);
      return payment ? paymentView(payment) : null;
    },

    /**
     * The payment once the wallet service has given it its paymentId (or once it never will: a
     * refused create is final), or as it stands after `waitMs`.
     */
    async viewOnceCreated(id: string, waitMs: number): Promise<PaymentView | null> {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const row = await deps.database.payment.findUnique({ where: { id }, select: { walletPaymentId: true, status: true } });
        if (!row) return null;
        if (row.walletPaymentId !== null || isFinalPaymentStatus(row.status) || Date.now() >= deadline) return this.view(id);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    /** Validated input only (createPaymentSchema, idempotencyKeySchema). */
    async start(idempotencyKey: string, body: CreatePaymentRequest, actor?: string): Promise<StartPaymentResult> {
      const amount = normaliseAmount(body.amount);
      const fingerprint = requestFingerprint(deps.fingerprintKey, ['PAYMENT', body.linkId.toLowerCase(), amount.currency, amount.value]);
      const link = await deps.database.link.findUnique({ where: { id: body.linkId }, select: { id: true } });
      if (!link) return { kind: 'link-not-found' };
      const id = randomUUID();
      const workflowId = workflowIdFor('payment', idempotencyKey);
      const inserted = await deps.database.$transaction(async (tx) => {
        const count = await tx.$executeRaw`
          INSERT INTO payment (id, idempotency_key, request_fingerprint, workflow_id, status, link_id, currency, amount, updated_at)
          VALUES (${id}::uuid, ${idempotencyKey}, ${fingerprint}, ${workflowId}, 'PENDING'::"PaymentStatus", ${body.linkId}::uuid,
                  ${amount.currency}, ${new Prisma.Decimal(amount.value)}, now())
          ON CONFLICT (idempotency_key) DO NOTHING`;
        if (count === 1) await tx.paymentEvent.create({ data: { paymentId: id, status: 'PENDING', detail: actor ? `payment requested by ops key ${actor}` : 'payment requested' } });
        return count;
      });
      if (inserted === 1) {
        await startWorkflow(id, workflowId);
        deps.logger.info({ paymentId: id, workflowId }, 'payment started');
        return { kind: 'created', payment: (await this.view(id))! };
      }
      const existing = await deps.database.payment.findUniqueOrThrow({ where: { idempotencyKey }, include: withPaymentEvents });
      if (existing.requestFingerprint !== fingerprint) return { kind: 'key-reused' };
      if (!isFinalPaymentStatus(existing.status)) await startWorkflow(existing.id, existing.workflowId);
      return { kind: 'existing', payment: paymentView(existing) };
    },

    /** Settles a payment in NEEDS_REVIEW through its workflow (a Temporal update), audited. */
    async resolve(id: string, request: ResolvePaymentRequest, resolvedBy: string): Promise<ResolvePaymentResult> {
      const payment = await find(id);
      if (!payment) return { kind: 'not-found' };
      if (payment.status !== 'NEEDS_REVIEW') return { kind: 'not-in-review', status: payment.status };
      const input: ResolvePaymentUpdateInput = { ...request, resolvedBy };
      // The row says NEEDS_REVIEW a moment before the workflow does (it parks, then waits): a
      // refusal while the row still says NEEDS_REVIEW is retried briefly.
      for (let attempt = 0; ; attempt += 1) {
        try {
          await deps.temporal.workflow.getHandle(payment.workflowId).executeUpdate(resolvePaymentUpdate, { args: [input] });
          break;
        } catch (error) {
          if (!(error instanceof WorkflowUpdateFailedError)) throw error;
          const current = await find(id);
          if (current?.status !== 'NEEDS_REVIEW' || attempt >= 20) return { kind: 'not-in-review', status: current?.status ?? payment.status };
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
      deps.logger.info({ paymentId: payment.id, outcome: request.outcome, resolvedBy }, 'payment resolved');
      return { kind: 'resolved', payment: (await this.view(payment.id))! };
    },
  };
}

export type PaymentService = ReturnType<typeof createPaymentService>;
