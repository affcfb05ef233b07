// How far each of the sweep's passes over recently finished fundings has gone (the sweep_mark
// table, written here alone). A pass reads the fundings finished since its mark, less MARK_MARGIN_MS,
// and moves its mark once it has seen all of them: so each funding is looked at in the sweeps of the
// hour after it finished, not in every sweep of a day (a day of 100,000 fundings read again every
// five minutes), and a sweep that did not run for hours (Temporal down, workers stopped) takes up
// from where the last one stopped, as far back as the pass looks at all (a day). The pass over every hold and the
// FAILED re-check also keep their position within a round (the last ledger transaction id read through; the last
// funding gone past, with how far its mark may move when it ends), so that the next sweep reads on from it.
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
   * The round begun from mark `round` (null: before any) has seen everything up to `through` (the database's clock):
   * its mark moves forward, never back, and the position it kept is dropped, the round over. Only the round's own:
   * an attempt of an earlier round that ends late (a stale one still running beside its retry) moves nothing and
   * drops nothing, or the round under way would start over (its position gone) or be passed by a mark it never read to.
   * A round is known by the mark it began from, so every end moves the mark, by a millisecond at least (a round whose
   * bound was a funding it could not ask about, inside the read margin, would otherwise leave it where the next round
   * begins too, and a stale attempt of the first would pass for the second's).
   */
  advance(pass: SweepPass, through: Date, round: Date | null): Promise<void>;
  /**
   * The pass's round under way: the mark it began from (null before any), the ledger transaction id it has read
   * through (the pass over every hold; null: none under way, it begins at the first), and the funding it has gone past
   * with how far its mark may move (the FAILED re-check; null: it begins at the first).
   */
  roundOf(pass: SweepPass): Promise<SweepRound>;
  /**
   * The round begun from mark `round` has read through `afterId`: the next sweep reads on from it. Nothing is kept if
   * another sweep (one by hand beside the schedule's, an attempt cut off still running) has ended the round meanwhile:
   * its position would make the next round begin past the holds before it.
   */
  keepPosition(pass: SweepPass, afterId: bigint, round: Date | null): Promise<void>;
  /**
   * The FAILED re-check's round begun from mark `round` has gone past `after` (a funding, by its updated_at and id),
   * and its mark may move at most to `markAtMost` when it ends (when the round began, or the oldest funding it could
   * not ask the wallet about): kept on the same terms as `keepPosition`. Two attempts of one round (a stale one beside
   * its retry) both pass that guard: the earlier bound of the two is kept, whichever writes last, so a funding one of
   * them could not ask about is never passed over by the round's mark.
   */
  keepRowPosition(pass: SweepPass, after: RowPosition, markAtMost: Date, round: Date | null): Promise<void>;
}

/** A funding a pass has gone past: its updated_at (milliseconds, as stored) and id. */
export interface RowPosition {
  at: Date;
  id: string;
}

export interface SweepRound {
  through: Date | null;
  afterId: bigint | null;
  afterRow: RowPosition | null;
  unaskedSince: Date | null;
}

export function createSweepMarks(database: Database): SweepMarks {
  return {
    async through(pass) {
      return (await database.sweepMark.findUnique({ where: { pass } }))?.through ?? null;
    },
    async advance(pass, through, round) {
      // A pass that never ended a round has no mark, or the epoch a kept position wrote (keepPosition): as none.
      const begunFrom = round ?? new Date(0);
      await database.$executeRaw`
        INSERT INTO sweep_mark (pass, through) VALUES (${pass}, ${through})
        ON CONFLICT (pass) DO UPDATE SET through = GREATEST(sweep_mark.through + interval '1 millisecond', EXCLUDED.through), after_id = NULL,
          after_at = NULL, after_key = NULL, unasked_since = NULL
        WHERE sweep_mark.through = ${begunFrom}`;
    },
    async roundOf(pass) {
      const row = await database.sweepMark.findUnique({ where: { pass } });
      return {
        through: row?.through ?? null,
        afterId: row?.afterId ?? null,
        afterRow: row?.afterAt && row.afterKey ? { at: row.afterAt, id: row.afterKey } : null,
        unaskedSince: row?.unaskedSince ?? null,
      };
    },
    async keepPosition(pass, afterId, round) {
      // A pass that never ended a round has no mark yet: the epoch, which is as good as none (through's docs).
      const begunFrom = round ?? new Date(0);
      await database.$executeRaw`
        INSERT INTO sweep_mark (pass, through, after_id) VALUES (${pass}, ${begunFrom}, ${afterId})
        ON CONFLICT (pass) DO UPDATE SET after_id = EXCLUDED.after_id WHERE sweep_mark.through = EXCLUDED.through`;
    },
    async keepRowPosition(pass, after, markAtMost, round) {
      const begunFrom = round ?? new Date(0);
      await database.$executeRaw`
        INSERT INTO sweep_mark (pass, through, after_at, after_key, unasked_since)
        VALUES (${pass}, ${begunFrom}, ${after.at}, ${after.id}::uuid, ${markAtMost})
        ON CONFLICT (pass) DO UPDATE SET after_at = EXCLUDED.after_at, after_key = EXCLUDED.after_key,
          unasked_since = LEAST(sweep_mark.unasked_since, EXCLUDED.unasked_since)
        WHERE sweep_mark.through = EXCLUDED.through`;
    },
  };
}

/** Where a pass reads from: its mark less the margin, but never before `earliest` (how far back it looks at all). */
export function readFrom(mark: Date | null, earliest: Date): Date {
  if (!mark) return earliest;
  const fromMark = new Date(mark.getTime() - MARK_MARGIN_MS);
  return fromMark > earliest ? fromMark : earliest;
}
