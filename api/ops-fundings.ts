// The fundings ops API: start a funding (idempotent on Idempotency-Key: one funding and one
// workflow per key), read one, list them, cancel one before it executes.
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { Prisma } from '../generated/prisma/client.ts';
import {
  cancellableFundingStatuses,
  createFundingSchema,
  fundingErrorMessage,
  fundingStatuses,
  idempotencyKeySchema,
  isFinalFundingStatus,
  maskCashInCode,
  type CreateFundingRequest,
} from '../domain/funding.ts';
import { normaliseAmount } from '../domain/money.ts';
import { searchAttributes } from '../domain/search-attributes.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { fundingView } from './funding-view.ts';
import { sendProblem } from './problem.ts';
import { validationProblem } from './validation.ts';

export interface OpsFundingsDependencies {
  database: Database;
  temporal: Client;
  taskQueue: string;
  cipher: TokenCipher;
  /** HMAC key for request fingerprints (a cash-in code is never stored or hashed bare). */
  fingerprintKey: Buffer;
  logger: Logger;
}

/** Must match activities/funding.ts. */
const cashInCodeContext = (fundingId: string) => `funding:${fundingId}:cash_in_code`;

/** The workflow id is derived from the key, so one key can only ever start one workflow. */
export function fundingWorkflowId(idempotencyKey: string): string {
  return `funding-${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex').slice(0, 40)}`;
}

const listQuerySchema = z
  .object({
    status: z.enum(fundingStatuses, { error: `status must be one of ${fundingStatuses.join(', ')}` }).optional(),
    from: z.iso.datetime({ offset: true, error: 'from must be an ISO-8601 date-time' }).optional(),
    to: z.iso.datetime({ offset: true, error: 'to must be an ISO-8601 date-time' }).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(200).optional(),
  })
  .strict();

const fundingIdSchema = z.uuid();

const withEvents = { events: { orderBy: { id: 'asc' as const } } };

/** Cursor: the last item's createdAt and id, base64url JSON (newest first). */
function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url');
}
function decodeCursor(cursor: string): { createdAt: Date; id: string } | null {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    if (Number.isNaN(createdAt.getTime()) || !fundingIdSchema.safeParse(id).success) return null;
    return { createdAt, id };
  } catch {
    return null;
  }
}

export function opsFundingsRouter(deps: OpsFundingsDependencies): Router {
  const router = Router();

  const fingerprint = (body: CreateFundingRequest) => {
    const amount = normaliseAmount(body.amount);
    const canonical =
      body.recipient.type === 'CODE'
        ? ['CODE', body.recipient.code, amount.currency, amount.value]
        : ['TOKEN', body.recipient.linkId.toLowerCase(), amount.currency, amount.value];
    return createHmac('sha256', deps.fingerprintKey).update(JSON.stringify(canonical)).digest('hex');
  };

  async function startWorkflow(fundingId: string, workflowId: string, recipientType: 'CODE' | 'TOKEN') {
    try {
      await deps.temporal.workflow.start('fundWallet', {
        taskQueue: deps.taskQueue,
        workflowId,
        args: [{ fundingId }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        searchAttributes: {
          [searchAttributes.status.name]: ['PENDING'],
          [searchAttributes.kind.name]: ['FUNDING'],
          [searchAttributes.recipientType.name]: [recipientType],
        },
      });
    } catch (error) {
      // A closed workflow with this id: the funding already ran; nothing to start.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  const loadView = async (fundingId: string) => {
    const funding = await deps.database.funding.findUnique({ where: { id: fundingId }, include: withEvents });
    return funding ? fundingView(funding) : null;
  };

  router.post('/fundings', async (req: Request, res: Response) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const parsed = createFundingSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const body = parsed.data;
    const requestFingerprint = fingerprint(body);
    const workflowId = fundingWorkflowId(key.data);

    if (body.recipient.type === 'TOKEN') {
      const link = await deps.database.link.findUnique({ where: { id: body.recipient.linkId }, select: { status: true } });
      if (!link) {
        sendProblem(res, { status: 422, code: 'LINK_NOT_FOUND', title: 'Unprocessable Content', detail: `no link ${body.recipient.linkId}` });
        return;
      }
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
      VALUES (${fundingId}::uuid, ${key.data}, ${requestFingerprint}, ${workflowId}, 'PENDING'::"FundingStatus",
              ${recipient.type}::"RecipientType", ${recipient.type === 'TOKEN' ? recipient.linkId : null}::uuid,
              ${recipient.type === 'CODE' ? Buffer.from(deps.cipher.encrypt(recipient.code, cashInCodeContext(fundingId))) : null},
              ${recipient.type === 'CODE' ? maskCashInCode(recipient.code) : null}, ${amount.currency},
              ${new Prisma.Decimal(amount.value)}, ARRAY[]::text[], now())
      ON CONFLICT (idempotency_key) DO NOTHING`;
      if (count === 1) await tx.fundingEvent.create({ data: { fundingId, status: 'PENDING', detail: 'funding requested' } });
      return count;
    });

    if (inserted === 1) {
      await startWorkflow(fundingId, workflowId, recipient.type);
      deps.logger.info({ fundingId, workflowId, recipientType: recipient.type }, 'funding started');
      res.status(202).json(await loadView(fundingId));
      return;
    }

    const existing = await deps.database.funding.findUniqueOrThrow({ where: { idempotencyKey: key.data }, include: withEvents });
    if (existing.requestFingerprint !== requestFingerprint) {
      sendProblem(res, {
        status: 422,
        code: 'IDEMPOTENCY_KEY_REUSED',
        title: 'Unprocessable Content',
        detail: 'this Idempotency-Key was used with a different request body',
      });
      return;
    }
    // The first request may have stored the funding and died before starting its workflow.
    if (!isFinalFundingStatus(existing.status)) await startWorkflow(existing.id, existing.workflowId, existing.recipientType);
    res.status(200).json(fundingView(existing));
  });

  router.get('/fundings/:fundingId', async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const view = id.success ? await loadView(id.data) : null;
    if (!view) {
      sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${req.params.fundingId}` });
      return;
    }
    res.json(view);
  });

  router.get('/fundings', async (req, res) => {
    const query = listQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    const { status, from, to, limit, cursor } = query.data;
    const after = cursor ? decodeCursor(cursor) : null;
    if (cursor && !after) {
      sendProblem(res, { status: 400, code: 'INVALID_CURSOR', title: 'Bad Request', detail: 'cursor is not one this API returned' });
      return;
    }
    const where: Prisma.FundingWhereInput = {
      ...(status ? { status } : {}),
      ...(from || to ? { createdAt: { ...(from ? { gte: new Date(from) } : {}), ...(to ? { lt: new Date(to) } : {}) } } : {}),
      ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
    };
    const rows = await deps.database.funding.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
      include: withEvents,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    res.json({ items: page.map(fundingView), nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null });
  });

  router.post('/fundings/:fundingId/cancel', async (req, res) => {
    const id = fundingIdSchema.safeParse(req.params.fundingId);
    const funding = id.success ? await deps.database.funding.findUnique({ where: { id: id.data } }) : null;
    if (!funding) {
      sendProblem(res, { status: 404, code: 'FUNDING_NOT_FOUND', title: 'Not Found', detail: `no funding ${req.params.fundingId}` });
      return;
    }
    // The database decides the race with the workflow's beginExecute: only one of them wins.
    const cancelled = await deps.database.$transaction(async (tx) => {
      const updated = await tx.funding.updateMany({
        where: { id: funding.id, status: { in: [...cancellableFundingStatuses] }, cancelRequested: false },
        data: { cancelRequested: true, status: 'FAILED', errorCode: 'CANCELLED', errorMessage: fundingErrorMessage('CANCELLED') },
      });
      if (updated.count === 1) await tx.fundingEvent.create({ data: { fundingId: funding.id, status: 'FAILED', detail: 'cancelled by ops' } });
      return updated.count === 1;
    });
    if (!cancelled) {
      const current = await loadView(funding.id);
      sendProblem(res, {
        status: 409,
        code: 'FUNDING_NOT_CANCELLABLE',
        title: 'Conflict',
        detail: `the funding is ${current?.status ?? funding.status}: only a funding that has not started executing can be cancelled`,
      });
      return;
    }
    await deps.temporal.workflow
      .getHandle(funding.workflowId)
      .signal('cancelled')
      .catch((error: Error) => deps.logger.warn({ fundingId: funding.id, err: error.message }, 'could not nudge the workflow after cancel'));
    res.json(await loadView(funding.id));
  });

  return router;
}
