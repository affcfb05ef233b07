// Which wallet payments the wallet call audit shows executed (a successful execute call), for the
// day's settlement (ledger/settlement.ts): the audit is walletflow's evidence of what the wallet did.
import type { Database } from '../lib/database.ts';

export async function executedWalletPayments(database: Database, walletPaymentIds: string[]): Promise<Set<string>> {
  if (walletPaymentIds.length === 0) return new Set();
  const paths = walletPaymentIds.map((id) => `/merchant/payments/${id}/execute`);
  const rows = await database.$queryRaw<Array<{ path: string }>>`
    SELECT DISTINCT path FROM wallet_call WHERE operation = 'op.payments.execute' AND outcome = 'ok' AND path = ANY(${paths}::text[])`;
  const executed = new Set(rows.map((row) => row.path));
  return new Set(walletPaymentIds.filter((id) => executed.has(`/merchant/payments/${id}/execute`)));
}
