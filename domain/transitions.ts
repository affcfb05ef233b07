// State machines as data: a table of the legal moves out of each status, and what follows from it
// (the final statuses, the statuses a move may start from). The records build their SQL guards
// from these tables (sourcesOf), so which moves are legal is written once, in domain/
// (test/unit/docs-truth.test.ts finds any guard written by hand).

/** For each status, the statuses it may move to; a final status has none. */
export type TransitionTable<Status extends string> = { readonly [From in Status]: readonly Status[] };

/** The statuses of a table (declared `as const`) with no move out of them. */
export type FinalStatusOf<Table> = {
  [From in keyof Table]: Table[From] extends readonly [] ? From : never;
}[keyof Table];

/** Every status of the table, in the order it declares them. */
export function statusesOf<Status extends string>(table: TransitionTable<Status>): Status[] {
  return Object.keys(table) as Status[];
}

/** The statuses with no move out: once there, a record never changes state again. */
export function finalStatusesOf<Table extends TransitionTable<string>>(
  table: Table,
): Array<FinalStatusOf<Table> & string> {
  return statusesOf(table).filter((status) => table[status]!.length === 0) as Array<FinalStatusOf<Table> & string>;
}

export function canMove<Status extends string>(table: TransitionTable<Status>, from: Status, to: Status): boolean {
  return table[from].includes(to);
}

/**
 * The statuses from which a move to `to` is legal: a record's `WHERE status IN (…)` guard. A step
 * that may only make some of these moves (cancel, a person's resolution) narrows the list with
 * `filter`, never widens it.
 */
export function sourcesOf<Status extends string>(table: TransitionTable<Status>, to: Status): Status[] {
  return statusesOf(table).filter((from) => canMove(table, from, to));
}
