// Which wallet payments the wallet call audit shows executed, for the day's settlement (ledger/settlement.ts): the
// audit is walletflow's evidence of what the wallet did. Two answers say so: a successful execute, and the wallet's
// 409 PAYMENT_ALREADY_EXECUTED to the execute the payment's SUCCEEDED event names (contract section 5: only
// walletflow executes its payment ids, and the wallet answers so only after an execute that took effect; the first
// answer was lost). A call's path is stored as sent, OP_URL's path prefix included
// (`/op/merchant/payments/{id}/execute` against the sandbox), so the payment id is read from its end: the expression
// the partial index wallet_call_payment_executed_idx holds, one entry per successful execute; the 409 is found by its
// Request-Reference-No (wallet_call's index on it).
import type { Database } from '../lib/database.ts';

/** A payment as the settlement asks about it: its wallet id, and the call its SUCCEEDED event names (if any). */
export interface PaymentExecuteEvidence {
  walletPaymentId: string;
  succeededBy: string | null;
}

export async function executedWalletPayments(
  database: Database,
  payments: readonly PaymentExecuteEvidence[],
): Promise<Set<string>> {
  if (payments.length === 0) return new Set();
  const walletPaymentIds = payments.map((payment) => payment.walletPaymentId);
  const references = payments.flatMap((payment) => (payment.succeededBy ? [payment.succeededBy] : []));
  const rows = await database.$queryRaw<Array<{ id: string }>>`
    SELECT DISTINCT substring(path from '/merchant/payments/([^/]+)/execute$') AS id FROM wallet_call
    WHERE operation = 'op.payments.execute' AND outcome = 'ok'
      AND substring(path from '/merchant/payments/([^/]+)/execute$') = ANY(${walletPaymentIds}::text[])
    UNION
    SELECT substring(path from '/merchant/payments/([^/]+)/execute$') AS id FROM wallet_call
    WHERE request_reference_no = ANY(${references}::text[])
      AND operation = 'op.payments.execute' AND http_status = 409 AND error_code = 'PAYMENT_ALREADY_EXECUTED'
      AND substring(path from '/merchant/payments/([^/]+)/execute$') = ANY(${walletPaymentIds}::text[])`;
  return new Set(rows.map((row) => row.id));
}
