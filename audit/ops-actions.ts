// The audit of ops writes (contract-decisions section 12: every action records the key's name):
// one row per write request to the ops API, whatever it answered, with the ops key's name (and
// the X-Ops-Actor note). The only writer of ops_action.
import type { Database } from '../lib/database.ts';

export interface OpsActionEntry {
  keyName: string;
  /** The X-Ops-Actor note, when the caller gave a well-formed one. */
  actor: string | null;
  method: string;
  path: string;
  status: number;
  requestId: string | null;
}

export async function recordOpsAction(database: Database, entry: OpsActionEntry): Promise<void> {
  await database.opsAction.create({
    data: { keyName: entry.keyName.slice(0, 128), actor: entry.actor?.slice(0, 100) ?? null, method: entry.method.slice(0, 8), path: entry.path.slice(0, 512), status: entry.status, requestId: entry.requestId?.slice(0, 64) ?? null },
  });
}
