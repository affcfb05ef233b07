// The lean floor's activities: the same two wallet calls as a funding (the same wallet client),
// each followed by one plain SQL write of what it got: the row a funding's steps would keep.
import type pg from 'pg';
import type { WalletClient } from '../../wallet/index.ts';
import { leanTable, type LeanFundingInput } from './lean-contract.ts';

export function createLeanActivities(deps: {
  wallet: Pick<WalletClient, 'createTransfer' | 'executeTransfer'>;
  pool: pg.Pool;
}) {
  return {
    async leanCreate(input: LeanFundingInput): Promise<string> {
      const row = await deps.pool.query<{ code: string }>(`SELECT code FROM ${leanTable} WHERE id = $1`, [input.id]);
      const code = row.rows[0]?.code;
      if (!code) throw new Error(`lean floor item ${input.id} has no row`);
      const created = await deps.wallet.createTransfer({
        recipient: { type: 'CODE', value: code },
        amount: input.amount,
      });
      await deps.pool.query(`UPDATE ${leanTable} SET transfer_id = $2, status = 'CREATED' WHERE id = $1`, [
        input.id,
        created.data.transferId,
      ]);
      return created.data.transferId;
    },
    async leanExecute(id: string, transferId: string): Promise<string> {
      const executed = await deps.wallet.executeTransfer(transferId);
      await deps.pool.query(`UPDATE ${leanTable} SET status = $2, final_at = clock_timestamp() WHERE id = $1`, [
        id,
        executed.data.status,
      ]);
      return executed.data.status;
    },
  };
}

export type LeanActivities = ReturnType<typeof createLeanActivities>;

/** The table, made by the lean worker at start (the bench's database is a fresh one). */
export const createLeanTable = `CREATE TABLE IF NOT EXISTS ${leanTable} (
  id uuid PRIMARY KEY, code text NOT NULL, transfer_id text, status text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(), final_at timestamptz)`;
