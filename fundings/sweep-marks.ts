// How far each of the sweep's passes over recently finished fundings has gone (the sweep_mark
// table, written here alone). A pass reads the fundings finished since its mark, less MARK_MARGIN_MS,
// and moves its mark once it has seen all of them: so each funding is looked at in the sweeps of the
// hour after it finished, not in every sweep of a day (a day of 100,000 fundings read again every
// five minutes), and a sweep that did not run for hours (Temporal down, workers stopped) takes up
// from where the last one stopped, as far back as the pass looks at all (a day). The pass over every hold also keeps
// its position within a round (the last ledger transaction id read through), so that the next sweep reads on from it.
import type { Database } from '../lib/database.ts';

/**
 * The passes: `failed-recheck`, FAILED fundings with a transfer asked of the wallet again; `open-holds`, final
 * fundings whose hold is still open; `open-holds-full`, the same over every funding ever, once a day (a hand-made
 * repair in SQL may leave updated_at as it was).
 */
export type SweepPass = 'failed-recheck' | 'open-holds' | 'open-holds-full';

/**
 * How far before its mark a pass reads again. A funding's updated_at is its transaction's start (raw SQL's now()), not
 * its commit, or the clock of the host that wrote it (Prisma's @updatedAt), while the mark is the database's: the
 * margin covers a late commit and a host's clock up to an hour behind the database's.
 */
export const MARK_MARGIN_MS = 60 * 60_000;

export interface SweepMarks {
  /** Where the pass has gone through; null (or the epoch, once it kept a position) before its first round ended. */
  through(pass: SweepPass): Promise<Date | null>;
  /**
   * The pass has seen everything up to `through` (the database's clock): its mark moves forward, never back, and the
   * round it kept a position in is over.
   */
  advance(pass: SweepPass, through: Date): Promise<void>;
  /**
   * The pass's round under way: the mark it began from (null before any) and the ledger transaction id it has read
   * through (null: none under way, it begins at the first).
   */
  roundOf(pass: SweepPass): Promise<{ through: Date | null; afterId: bigint | null }>;
  /**
   * The round begun from mark `round` has read through `afterId`: the next sweep reads on from it. Nothing is kept if
   * another sweep (one by hand beside the schedule's, an attempt cut off still running) has ended the round meanwhile:
   * its position would make the next round begin past the holds before it.
   */
  keepPosition(pass: SweepPass, afterId: bigint, round: Date | null): Promise<void>;
}

export function createSweepMarks(database: Database): SweepMarks {
  return {
    async through(pass) {
      return (await database.sweepMark.findUnique({ where: { pass } }))?.through ?? null;
    },
    async advance(pass, through) {
      await database.$executeRaw`
        INSERT INTO sweep_mark (pass, through) VALUES (${pass}, ${through})
        ON CONFLICT (pass) DO UPDATE SET through = GREATEST(sweep_mark.through, EXCLUDED.through), after_id = NULL`;
    },
    async roundOf(pass) {
      const row = await database.sweepMark.findUnique({ where: { pass } });
      return { through: row?.through ?? null, afterId: row?.afterId ?? null };
    },
    async keepPosition(pass, afterId, round) {
      // A pass that never ended a round has no mark yet: the epoch, which is as good as none (through's docs).
      const begunFrom = round ?? new Date(0);
      await database.$executeRaw`
        INSERT INTO sweep_mark (pass, through, after_id) VALUES (${pass}, ${begunFrom}, ${afterId})
        ON CONFLICT (pass) DO UPDATE SET after_id = EXCLUDED.after_id WHERE sweep_mark.through = EXCLUDED.through`;
    },
  };
}

/** Where a pass reads from: its mark less the margin, but never before `earliest` (how far back it looks at all). */
export function readFrom(mark: Date | null, earliest: Date): Date {
  if (!mark) return earliest;
  const fromMark = new Date(mark.getTime() - MARK_MARGIN_MS);
  return fromMark > earliest ? fromMark : earliest;
}
