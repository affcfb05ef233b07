// Finding payments for the ops console's search and pages: by walletflow's id, the wallet's
// payment id or the idempotency key, each a unique or indexed column (at most a few rows). Reads
// of the payment table, offered to the API (docs/architecture.md, reads across capabilities).
import type { PaymentStatus } from '../domain/payment.ts';
import { storedAmount, type Amount } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { isUuid } from '../domain/ids.ts';

/** A payment as a search result lists it. */
export interface PaymentHit {
  id: string;
  /** The wallet service's payment id, once created. */
  paymentId: string | null;
  status: PaymentStatus;
  amount: Amount;
  linkId: string;
  createdAt: Date;
}

const hitColumns = {
  id: true,
  walletPaymentId: true,
  status: true,
  amount: true,
  currency: true,
  linkId: true,
  createdAt: true,
} as const;

/** The payments `text` names exactly: by id, the wallet's payment id, or idempotency key. */
export async function paymentsNamedBy(database: Database, text: string): Promise<PaymentHit[]> {
  const byId = isUuid(text)
    ? database.payment.findMany({ where: { id: text.toLowerCase() }, select: hitColumns })
    : Promise.resolve([]);
  const byWalletId =
    text.length <= 100
      ? database.payment.findMany({
          where: { walletPaymentId: text },
          select: hitColumns,
          orderBy: { createdAt: 'desc' },
          take: 20,
        })
      : Promise.resolve([]);
  const byKey =
    text.length <= 255
      ? database.payment.findMany({ where: { idempotencyKey: text }, select: hitColumns })
      : Promise.resolve([]);
  const rows = (await Promise.all([byId, byWalletId, byKey])).flat();
  const seen = new Set<string>();
  return rows
    .filter((row) => !seen.has(row.id) && seen.add(row.id))
    .map((row) => ({
      id: row.id,
      paymentId: row.walletPaymentId,
      status: row.status,
      amount: storedAmount(row),
      linkId: row.linkId,
      createdAt: row.createdAt,
    }));
}

/** What a payment's page shows beyond its view: walletflow's id, where its workflow runs, its key. */
export interface PaymentFacts {
  id: string;
  workflowId: string;
  idempotencyKey: string;
}

/** By walletflow's id or the wallet's payment id, as the payment service reads one. */
export async function paymentFacts(database: Database, id: string): Promise<PaymentFacts | null> {
  if (!/^[A-Za-z0-9-]{1,100}$/.test(id)) return null;
  return database.payment.findFirst({
    where: isUuid(id) ? { OR: [{ id: id.toLowerCase() }, { walletPaymentId: id }] } : { walletPaymentId: id },
    select: { id: true, workflowId: true, idempotencyKey: true },
  });
}
