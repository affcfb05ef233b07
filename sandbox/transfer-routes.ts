// The transfer service under /v1: create, execute and retrieve with the partner's API key as
// HTTP Basic user name (contract-decisions section 2), each wrapped by the fault layer.
import express, { Router, type Request } from 'express';
import { z } from 'zod';
import { wireAmountSchema, walletAmountFromWire } from './amounts.ts';
import { parseBody, serviceError } from './answers.ts';
import type { SandboxContext } from './context.ts';
import { withFaults } from './faults.ts';
import { basicCredentials, sameSecret, transferRequestReference } from './request-checks.ts';
import { createTransfer, executeTransfer, requireTransfer, transferView } from './transfers.ts';

const createTransferSchema = z.object({
  recipient: z.object({ type: z.enum(['TOKEN', 'CODE']), value: z.string().min(1).max(8192) }),
  amount: wireAmountSchema,
});

export function transferRouter(context: SandboxContext): Router {
  const router = Router();
  router.use(express.json({ limit: '64kb' }));

  const authenticate = (req: Request): void => {
    const credentials = basicCredentials(req);
    if (
      !credentials ||
      !sameSecret(credentials.user, context.registration.transferApiKey) ||
      credentials.password !== ''
    ) {
      throw serviceError(401, 'UNAUTHORIZED', 'Missing or wrong API key');
    }
  };
  const transferId = (req: Request): string => String(req.params.transferId);

  router.post(
    '/transfers',
    withFaults('transfers.create', 'service', context.faultContext, (req) => {
      authenticate(req);
      const requestReferenceNumber = transferRequestReference(req);
      const body = parseBody(createTransferSchema, req.body);
      const amount = walletAmountFromWire(body.amount, 'amount');
      const record = createTransfer(context, { recipient: body.recipient, amount, requestReferenceNumber });
      return { status: 201, body: transferView(record) };
    }),
  );

  router.put(
    '/transfers/:transferId/execute',
    withFaults('transfers.execute', 'service', context.faultContext, (req) => {
      authenticate(req);
      transferRequestReference(req);
      const record = executeTransfer(context, requireTransfer(context, transferId(req)));
      return { status: 200, body: transferView(record) };
    }),
  );

  router.get(
    '/transfers/:transferId',
    withFaults('transfers.retrieve', 'service', context.faultContext, (req) => {
      authenticate(req);
      transferRequestReference(req);
      return { status: 200, body: transferView(requireTransfer(context, transferId(req))) };
    }),
  );

  return router;
}
