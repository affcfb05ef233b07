// Which wallet payments the wallet call audit shows executed (a successful execute call), for the
// day's settlement (ledger/settlement.ts): the audit is walletflow's evidence of what the wallet did.
// A call's path is stored as sent, OP_URL's path prefix included (`/op/merchant/payments/{id}/execute`
// against the sandbox), so the payment id is read from its end: the expression the partial index
// wallet_call_payment_executed_idx holds, one entry per successful execute.
import type { Database } from '../lib/database.ts';

export async function executedWalletPayments(database: Database, walletPaymentIds: string[]): Promise<Set<string>> {
  if (walletPaymentIds.length === 0) return new Set();
  const rows = await database.$queryRaw<Array<{ id: string }>>`
    SELECT DISTINCT substring(path from '/merchant/payments/([^/]+)/execute$') AS id FROM wallet_call
    WHERE operation = 'op.payments.execute' AND outcome = 'ok'
      AND substring(path from '/merchant/payments/([^/]+)/execute$') = ANY(${walletPaymentIds}::text[])`;
  return new Set(rows.map((row) => row.id));
}
