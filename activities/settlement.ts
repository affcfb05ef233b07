// The settlement run's activities (workflows/settle-day.ts): count the day, check its items a page
// at a time, finish. A page of fundings is read by keyset (fundings/), its transfers retrieved from
// the wallet at most inFlight at once (activities/retrieve-gate.ts: a 429 slows the whole run down,
// as a batch does), its ledger postings read (ledger/), and its lines stored with the run's progress
// in one transaction (ledger/settlement-runs.ts); a page of payments the same way against the
// wallet call audit's executes (audit/). After each page the activity heartbeats with where it got
// to: a retried attempt (its worker died) starts there, and skips any item of the page whose line
// is already stored, so no stored line is retrieved again. Signatures and results are the
// workflow's, declared in its contract.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { executedWalletPayments } from '../audit/executed-payments.ts';
import { countFundingsApprovedOn, fundingsApprovedOn } from '../fundings/fundings-approved-on.ts';
import {
  fundingLine,
  fundingPosts,
  paymentLine,
  paymentPosts,
  dayEndsAt,
  SETTLEMENT_GRACE_MS,
  settlementDay,
  settlementWindowOf,
  type DayCursor,
  type WalletTransferRecord,
} from '../ledger/settlement.ts';
import { SettlementRunNotRunning, type SettlementRun, type SettlementRuns } from '../ledger/settlement-runs.ts';
import { databaseNow, type Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { countPaymentsSucceededOn, paymentsSucceededOn } from '../payments/payments-succeeded-on.ts';
import { isWalletError, retryDelayOf, transportCodes, type WalletClient, type WalletError } from '../wallet/index.ts';
import {
  settleDayFailureTypes,
  type SettleDayActivities,
  type SettleItemsInput,
  type SettleItemsOutcome,
  type SettlementCursor,
} from '../workflows/settle-day.contract.ts';
import { createRetrieveGate, type RetrieveGate } from './retrieve-gate.ts';
import { walletRetry } from './wallet-retry.ts';

export interface SettlementActivityDependencies {
  database: Database;
  runs: SettlementRuns;
  wallet: Pick<WalletClient, 'retrieveTransfer'>;
  logger: Logger;
  /** Tests only: the time taken for the database's clock; absent: the database's now(). */
  now?: () => number;
  /** Tests only: the pause before a retrieve's next try, times the try's number; absent: RETRY_PAUSE_MS. */
  retryPauseMs?: number;
}

/**
 * Where a report of the day so far ends, on the clock `now` is read by (the database's; a test's own, shifted as much).
 * An approval or a payment's success is stamped by the database at its statement's start, never before its
 * transaction's (funding_event.at, payment_event.at: statement_timestamp(), to the millisecond), and seen once that
 * commits, so every event stamped before the start of the oldest transaction still open here, or before now when none
 * is, is committed or never will be.
 * DAY_SO_FAR_MARGIN_MS below it (a transaction's start is taken a moment before PostgreSQL shows it open), never more
 * than SETTLEMENT_GRACE_MS before now (a transaction open that long writes no approval: the long ones are a batch's
 * PENDING and FAILED items). Where a session of this database cannot be seen (another role's, without
 * pg_read_all_stats), or does not report its activity, SETTLEMENT_GRACE_MS before now, as a whole day waits that long.
 */
async function daySoFarEnd(database: Database, now: number): Promise<number> {
  const [row] = await database.$queryRaw<Array<{ at: Date; until: Date; unseen: number }>>`
    WITH open AS (
      SELECT xact_start, query, state FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND usesysid IS NOT NULL
        AND (backend_type IS NULL OR backend_type = 'client backend'))
    SELECT now() AS at,
           date_trunc('milliseconds', LEAST(now(), (SELECT min(xact_start) FROM open))) AS until,
           (SELECT count(*)::int FROM open WHERE query = '<insufficient privilege>' OR state = 'disabled') AS unseen`;
  if (!row || row.unseen > 0) return now - SETTLEMENT_GRACE_MS;
  const behind = row.at.getTime() - row.until.getTime() + DAY_SO_FAR_MARGIN_MS;
  return now - Math.min(behind, SETTLEMENT_GRACE_MS);
}

/** How far below the oldest open transaction's start a report of the day so far ends (daySoFarEnd). */
const DAY_SO_FAR_MARGIN_MS = 250;

/** The failure type of a run's begin while its day is within SETTLEMENT_GRACE_MS of its end (retried at its end). */
const DAY_NOT_OVER = 'SettlementDayNotOver';

/** Where a settleItems attempt got to: what it heartbeats, and what a retried attempt starts from. */
interface SettleItemsCheckpoint {
  after: SettlementCursor | null;
  inFlight: number;
  /**
   * Transfers whose retrieve failed in every try of an attempt whose page went through (no record, a refusal of it, a
   * 5xx), with how many such attempts so far (absent in a checkpoint of an attempt that had none).
   */
  unreadable?: Record<string, number>;
  /**
   * Transfers whose retrieve failed in every try of an attempt that counted for none (its page stopped on failures, or
   * the wallet was away), not read since: asked for after the rest of their page, and their failures not taken for the
   * wallet's at large (absent: none). So a page holding several transfers that each fail on their own goes through.
   */
  failedAtLarge?: string[];
}

/**
 * Attempts whose page went through in which every try of a transfer's retrieve must answer no record of it (a body
 * that is not a record, or another transfer's) or refuse it (a 4xx of its own) before its line says the record could
 * not be read: such answers may be a proxy's or a deploy's for a moment, and a line stored says so in the report.
 * Between attempts, Temporal's backoff (2 s, then 4 s, …); a page that stopped on its failures counts for none
 * (settleFundingsPage): a refusal of every transfer alike (a gateway's 400 page) is waited out, never stored line by
 * line.
 */
const UNREADABLE_ATTEMPTS = 3;

/**
 * Attempts whose page went through in which every try of a transfer's retrieve failed in a way that may pass (a 5xx, no
 * answer in time) before its line says the record could not be read: the rest of the day was read meanwhile, so this
 * one transfer's record is what the wallet cannot give (a record it cannot serialise), and a run retried for it alone
 * would never finish, nor would a fresh one. With Temporal's backoff, about five minutes.
 */
const LASTING_FAILURE_ATTEMPTS = 10;

/**
 * A transfer whose retrieve failed in every try of this attempt (settleFundingsPage counts it). `lineDue`: the words of
 * its "could not be read" line, when this is the attempt that stores it, should the page show the wallet answering
 * others; else null.
 */
class UnreadableForNow extends Error {
  constructor(
    readonly transferId: string,
    readonly walletError: WalletError,
    readonly lineDue: string | null,
  ) {
    super(`the wallet gave no record of transfer ${transferId} in any try (${walletError.code}); asked again later`);
  }
}

/**
 * Tries of one retrieve that failed other than by a 429 or a 404 before the attempt gives up (and is retried by
 * Temporal).
 */
const RETRIEVE_TRIES = 3;
/** The pause before a retrieve's next try, times the try's number (500 ms, then 750 ms). */
const RETRY_PAUSE_MS = 250;
/** When the wallet said 429 without saying when. */
const DEFAULT_SLOW_DOWN_MS = 1000;

/**
 * A wallet call through the run's gate (activities/retrieve-gate.ts): in one of its places, never while the wallet has
 * asked the run to wait. A 429 is not a try: nothing was read, the whole run waits its Retry-After, then the call is
 * made again. Any other failure is the caller's, its place already given back.
 */
async function throughGate<T>(gate: RetrieveGate, call: () => Promise<T>): Promise<T> {
  for (;;) {
    await gate.acquire();
    try {
      const value = await call();
      gate.succeeded();
      return value;
    } catch (error) {
      if (!isWalletError(error) || error.httpStatus !== 429) throw error;
      gate.rateLimited(retryDelayOf(error) ?? DEFAULT_SLOW_DOWN_MS);
    } finally {
      gate.release();
    }
  }
}
/**
 * Transfers of a page whose retrieves may fail for good (after their tries) before the page stops starting new ones:
 * a failure or two of one transfer's own leaves the rest of the page read and stored; more is the wallet failing at
 * large, and no more calls go out until the attempt is tried again.
 */
const FAILURES_BEFORE_A_PAGE_STOPS = 4;
/** How often a long page heartbeats while its retrieves run. */
const HEARTBEAT_EVERY_MS = 1000;

const notRunning = (runId: string) =>
  ApplicationFailure.nonRetryable(
    `settlement run ${runId} is gone or no longer running`,
    settleDayFailureTypes.notRunning,
  );

/** An answer that is no record of the transfer: not a record's shape, or another transfer's. */
const isNoRecordOfIt = (error: WalletError): boolean =>
  error.code === transportCodes.unparsableResponse || error.code === 'TRANSFER_MISMATCH';

/**
 * A refusal of this transfer, not the wallet's or the network's trouble: a 4xx whose outcome is `rejected` (never the
 * service's temporary failure, 7011, which passes).
 */
function refusesThisTransfer(error: WalletError): boolean {
  if (error.outcome !== 'rejected') return false;
  const status = error.httpStatus ?? 0;
  // 401 and 403 are walletflow's own credentials or address refused (every transfer alike): the run waits for them.
  return status >= 400 && status < 500 && ![401, 403, 404, 407, 408, 429].includes(status);
}

/** walletflow's own credentials or address refused (the wallet's or a proxy's): never one transfer's, waited out. */
const refusesUs = (error: WalletError): boolean => [401, 403, 407].includes(error.httpStatus ?? 0);

export function createSettlementActivities(deps: SettlementActivityDependencies): SettleDayActivities {
  const { database, runs, logger } = deps;

  async function runningRun(runId: string): Promise<SettlementRun> {
    const run = await runs.find(runId);
    if (!run || run.state !== 'RUNNING') throw notRunning(runId);
    return run;
  }

  /** A stored run that stopped running while this attempt worked: nothing more is written for it. */
  const stopOnNotRunning = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SettlementRunNotRunning) throw notRunning(error.runId);
      throw error;
    }
  };

  /**
   * The wallet's record of the transfer (null: it has none), through the gate; transient failures tried again, then the
   * attempt fails. `unreadableBefore`: the attempts before this one in which its answers were no record of it.
   */
  async function retrieve(
    gate: RetrieveGate,
    transferId: string,
    unreadableBefore: number,
  ): Promise<WalletTransferRecord> {
    for (let tries = 1; ; tries += 1) {
      try {
        const { data } = await throughGate(gate, () => deps.wallet.retrieveTransfer(transferId));
        return { status: data.status, amount: data.amount };
      } catch (error) {
        if (!isWalletError(error)) throw error;
        if (error.httpStatus === 404 && error.code === 'TRANSFER_NOT_FOUND') {
          gate.succeeded();
          return null;
        }
        if (tries >= RETRIEVE_TRIES) {
          // This transfer's own answer, every time, in enough attempts whose page went through: the line says it could
          // not be read, and the day goes on (a run retried for it would never finish). An answer that is no record of
          // it or a refusal of it: UNREADABLE_ATTEMPTS; a failure that may pass (a 5xx, no answer in time, a route not
          // found): LASTING_FAILURE_ATTEMPTS. Until then, and always for our own credentials or address refused (never
          // one transfer's), the attempt fails and Temporal tries it again.
          const unreadable = `${error.code} (${error.httpStatus ?? 'no status'})`;
          if (refusesUs(error)) throw walletRetry(error);
          const attemptsBeforeALine =
            isNoRecordOfIt(error) || refusesThisTransfer(error) ? UNREADABLE_ATTEMPTS : LASTING_FAILURE_ATTEMPTS;
          // Its line is stored only once the page shows the wallet answering others (settleFundingsPage): this attempt
          // may be the one a failure at large reached.
          throw new UnreadableForNow(
            transferId,
            error,
            unreadableBefore + 1 >= attemptsBeforeALine ? unreadable : null,
          );
        }
      }
      // The next try after a pause, its place given back meanwhile.
      await new Promise((resolve) => setTimeout(resolve, (deps.retryPauseMs ?? RETRY_PAUSE_MS) * (tries + 1)));
    }
  }

  return {
    async beginSettlementRun(runId: string): Promise<{ total: number }> {
      const run = await runningRun(runId);
      // Begun by an attempt before this one (its answer lost): what it wrote holds (runs.begin writes once).
      if (run.wholeDay || run.readUntil !== null) return { total: run.total };
      // The database's clock, as the events' times are; a day that ended less than SETTLEMENT_GRACE_MS ago is not read
      // yet: this attempt fails, and Temporal tries it again once the grace is over (nothing is written meanwhile).
      const now = deps.now ? deps.now() : (await databaseNow(database)).getTime();
      const ended = dayEndsAt(run.date, run.timeZone).getTime();
      const whole = ended + SETTLEMENT_GRACE_MS;
      if (now >= ended && now < whole)
        throw ApplicationFailure.create({
          type: DAY_NOT_OVER,
          message: `${run.date} ended less than ${SETTLEMENT_GRACE_MS / 1000} s ago (writes stamped before midnight may still commit): its run reads it once they have passed`,
          nonRetryable: false,
          nextRetryDelay: whole - now + 250,
        });
      // Begun reading after the day and its grace: the whole day, however early the run was asked for. Else a report of
      // the day so far, up to the instant before which every event is committed or never will be (daySoFarEnd): an
      // approval made a moment ago is in it, one still being committed is after that instant. It says up to when, and
      // reads no further whatever its pages reach (an approval made after that is in none of its pages, not in some).
      // An attempt tried again after its begin committed keeps the instant its counts were taken at.
      const wholeDay = now >= whole;
      const readUntil = wholeDay
        ? null
        : (run.readUntil ??
          new Date(
            Math.max(await daySoFarEnd(database, now), settlementDay(run.date, run.timeZone).startsAt.getTime()),
          ));
      const day = settlementWindowOf({ ...run, readUntil });
      const [fundings, payments] = await Promise.all([
        countFundingsApprovedOn(database, day),
        countPaymentsSucceededOn(database, day),
      ]);
      // An attempt overtaken (its worker paused past its time-out) may come after another's begin: the run keeps the
      // first, and this one answers it.
      const begun = await stopOnNotRunning(() => runs.begin(runId, fundings + payments, wholeDay, readUntil));
      logger.info({ runId, date: run.date, fundings, payments, wholeDay: begun.wholeDay }, 'settlement run began');
      return { total: begun.total };
    },

    async settleItems(input: SettleItemsInput): Promise<SettleItemsOutcome> {
      const context = Context.current();
      const resumed =
        context.info.attempt > 1 ? (context.info.heartbeatDetails as SettleItemsCheckpoint | undefined) : undefined;
      const run = await runningRun(input.runId);
      const day = settlementWindowOf(run);
      // The attempt's own end: cancelled by Temporal, or over however it ended. A page's retrieves run beside its
      // ledger read; once the attempt has failed (that read, a store), none of them starts another wallet call: the
      // attempt tried again asks for the page itself, and calls of an attempt that failed would add to its places.
      const attempt = new AbortController();
      const cancel = () => attempt.abort(context.cancellationSignal.reason);
      if (context.cancellationSignal.aborted) cancel();
      else context.cancellationSignal.addEventListener('abort', cancel, { once: true });
      const gate = createRetrieveGate({
        maxInFlight: input.maxInFlight,
        inFlight: resumed?.inFlight ?? input.inFlight,
        cancelled: attempt.signal,
      });
      const checkpoint: SettleItemsCheckpoint = {
        after: resumed?.after !== undefined ? resumed.after : input.after,
        inFlight: gate.inFlight(),
        unreadable: { ...resumed?.unreadable },
        failedAtLarge: [...(resumed?.failedAtLarge ?? [])],
      };
      if (resumed)
        logger.info(
          { runId: input.runId, side: input.side, after: checkpoint.after, attempt: context.info.attempt },
          'settlement: going on where the last attempt stopped',
        );
      const beat = () =>
        context.heartbeat({ ...checkpoint, inFlight: gate.inFlight() } satisfies SettleItemsCheckpoint);
      if (resumed?.unreadable && Object.keys(resumed.unreadable).length > 0)
        logger.info(
          { runId: input.runId, transfers: Object.keys(resumed.unreadable).length },
          'settlement: asking again for transfers whose answers were no record of them',
        );
      const beating = setInterval(beat, HEARTBEAT_EVERY_MS);
      let stored = 0;
      let read = 0;
      let done = false;
      try {
        while (read < input.maxItems) {
          if (context.cancellationSignal.aborted) throw context.cancellationSignal.reason;
          const limit = Math.min(input.pageSize, input.maxItems - read);
          const after: DayCursor | null = checkpoint.after;
          const page =
            input.side === 'fundings'
              ? await settleFundingsPage(
                  gate,
                  context.cancellationSignal,
                  input.runId,
                  await fundingsApprovedOn(database, day, after, limit),
                  checkpoint,
                  beat,
                )
              : await settlePaymentsPage(input.runId, await paymentsSucceededOn(database, day, after, limit));
          stored += page.stored;
          read += page.read;
          if (page.next === null) {
            done = true;
            checkpoint.after = null;
            break;
          }
          checkpoint.after = page.next;
          beat();
        }
      } finally {
        clearInterval(beating);
        context.cancellationSignal.removeEventListener('abort', cancel);
        attempt.abort(new Error('the settleItems attempt has ended'));
      }
      return {
        after: done ? null : checkpoint.after,
        done,
        stored,
        inFlight: gate.inFlight(),
        rateLimited: gate.rateLimitedCount(),
      };
    },

    async finishSettlementRun(runId: string) {
      // A retry of a finish that committed (its answer was lost) answers what it wrote.
      let run = await runs.find(runId);
      if (run?.state !== 'SUCCEEDED') {
        await runningRun(runId);
        run = await stopOnNotRunning(() => runs.finish(runId));
      }
      const sides = run.summary ?? {
        fundings: { matched: 0, missing: 0, mismatched: 0 },
        payments: { matched: 0, missing: 0, mismatched: 0 },
      };
      const counts = {
        checked: run.checked,
        matched: sides.fundings.matched + sides.payments.matched,
        missing: sides.fundings.missing + sides.payments.missing,
        mismatched: sides.fundings.mismatched + sides.payments.mismatched,
      };
      logger.info({ runId, date: run.date, ...counts }, 'settlement run finished');
      return counts;
    },
  };

  /**
   * A page of fundings: those not stored yet retrieved (through the gate) and compared, their lines stored with the
   * run's progress. A retrieve that failed for good fails the attempt, after the lines of those read are stored: the
   * attempt tried again reads the page again and retrieves only the rest (a page of 500 was retrieved whole again for
   * one transfer's failure, and under a wallet failing a call in five, never got through).
   */
  async function settleFundingsPage(
    gate: RetrieveGate,
    cancelled: AbortSignal,
    runId: string,
    page: Awaited<ReturnType<typeof fundingsApprovedOn>>,
    checkpoint: SettleItemsCheckpoint,
    beat: () => void,
  ) {
    const unreadable = (checkpoint.unreadable ??= {});
    const failedAtLarge = new Set(checkpoint.failedAtLarge);
    const stored = await runs.storedItems(
      runId,
      'funding',
      page.items.map((funding) => funding.id),
    );
    /** Failed in every try of an attempt before: its own failure, or the wallet's at large then. */
    const failedBefore = (transferId: string | null) =>
      transferId !== null && (unreadable[transferId] !== undefined || failedAtLarge.has(transferId));
    // Those that failed before are asked for last: the rest of the page is read first, and their failures alone cannot
    // stop it.
    const unstored = page.items.filter((funding) => !stored.has(funding.id));
    const fresh = [
      ...unstored.filter((funding) => !failedBefore(funding.transferId)),
      ...unstored.filter((funding) => failedBefore(funding.transferId)),
    ];
    const [posts, results] = await Promise.all([
      fundingPosts(
        database,
        fresh.map((funding) => funding.id),
      ),
      gate.each(
        fresh.map(
          (funding) => () =>
            funding.transferId === null
              ? Promise.resolve(null)
              : retrieve(gate, funding.transferId, unreadable[funding.transferId] ?? 0),
        ),
        FAILURES_BEFORE_A_PAGE_STOPS,
      ),
    ]);
    // Those that failed in every try (no record, a refusal, a 5xx) count one attempt more, for the next, and a line
    // saying the record could not be read is stored for one whose count is reached; but neither in a page that stopped
    // on failures of transfers that had not failed before (the wallet, or a proxy before it, failing at large: a
    // garbling proxy, a gateway's 400 page, a 5xx everywhere): the run waits that out, rather than store one false line
    // after another. Those failures mark their transfers, which the next attempt asks for after the rest of the page:
    // several transfers that each fail on their own, every attempt, then no longer stop it (before, four such held the
    // day for good).
    // Nor in a page where the wallet described none of this attempt's retrieves: its failures (the one transfer left of
    // a page, or those marked) cannot tell one transfer's failure from the wallet's at large, so a transfer of the page
    // it described in an earlier attempt is asked for once; no answer to it either, and the wallet is away. With none
    // to ask, a few failures (a small day failing from the start) count, as one transfer's own would; as many as stop
    // a page do not.
    const failed = (index: number) => {
      const result = results[index]!;
      return !result.ok && 'error' in result;
    };
    const failures = fresh.filter((_, index) => failed(index)).length;
    const newFailures = fresh.filter((funding, index) => failed(index) && !failedBefore(funding.transferId)).length;
    const described = (index: number) => {
      const result = results[index]!;
      return result.ok && result.value !== null;
    };
    const atLarge =
      newFailures >= FAILURES_BEFORE_A_PAGE_STOPS ||
      (failures > 0 &&
        !fresh.some((_, index) => described(index)) &&
        !cancelled.aborted &&
        !(await walletAnswers(gate, runId, page.items, stored, failures < FAILURES_BEFORE_A_PAGE_STOPS)));
    /** A failure of this attempt whose line is due, the page showing the wallet answering others. */
    const lineDue = (result: (typeof results)[number]): string | null =>
      !atLarge && !cancelled.aborted && !result.ok && 'error' in result && result.error instanceof UnreadableForNow
        ? result.error.lineDue
        : null;
    const lines = fresh.flatMap((funding, index) => {
      const result = results[index]!;
      if (result.ok) return [fundingLine(funding, result.value, posts)];
      const unreadableWords = lineDue(result);
      return unreadableWords === null ? [] : [fundingLine(funding, { unreadable: unreadableWords }, posts)];
    });
    const newLines = await stopOnNotRunning(() => runs.store(runId, lines));
    fresh.forEach((funding, index) => {
      const result = results[index]!;
      // Read, or its line stored: no count of theirs is needed again.
      if ((result.ok || lineDue(result) !== null) && funding.transferId) {
        delete unreadable[funding.transferId];
        failedAtLarge.delete(funding.transferId);
      } else if (!result.ok && 'error' in result && result.error instanceof UnreadableForNow) {
        // An attempt cancelled, or one the wallet failed at large, counts for none: the transfer is only marked.
        if (atLarge || cancelled.aborted) failedAtLarge.add(result.error.transferId);
        else unreadable[result.error.transferId] = (unreadable[result.error.transferId] ?? 0) + 1;
      }
    });
    checkpoint.failedAtLarge = [...failedAtLarge];
    beat();
    // A cancelled attempt says so, whatever else failed in the page first.
    if (cancelled.aborted) throw cancelled.reason;
    // A page whose retrieves stopped before each was asked for is not done, whatever lines its failures got: the
    // attempt fails, and the next asks for the rest (before, a page with more transfers failing alike than an attempt
    // asks for at once went on with the rest never read, and the day's report was short of them).
    const notAskedFor = results.some((result) => !result.ok && !('error' in result));
    const unresolved = results.find(
      (result) => !result.ok && 'error' in result && (lineDue(result) === null || notAskedFor),
    );
    if (unresolved && 'error' in unresolved)
      throw unresolved.error instanceof UnreadableForNow ? walletRetry(unresolved.error.walletError) : unresolved.error;
    return { stored: newLines, read: page.items.length, next: page.next };
  }

  /**
   * Whether the wallet describes now a transfer of the page it described in an earlier attempt (its stored line holds
   * the wallet's record), or else one of the run's earlier pages (the day's last page, of a transfer or two): asked
   * once. With none to ask, `noneToAsk`: true for a few failures (a small day failing from the start: nothing to tell
   * the wallet away by), false for as many as stop a page (they cannot be told from the wallet away). Through the
   * gate, as every retrieve: a 429 is the wallet there but asking the run to wait, which it does, then asks again
   * (before, the check went round the gate and took a 429 for the wallet away: while the wallet rate-limited the
   * partner, a transfer failing on its own never got its line, and the day stayed RUNNING).
   */
  async function walletAnswers(
    gate: RetrieveGate,
    runId: string,
    items: ReadonlyArray<{ id: string; transferId: string | null }>,
    stored: ReadonlySet<string>,
    noneToAsk: boolean,
  ): Promise<boolean> {
    const described = await runs.storedItems(
      runId,
      'funding',
      items.filter((funding) => stored.has(funding.id)).map((funding) => funding.id),
      { withWalletRecord: true },
    );
    // Another each attempt (one of the page's at random, else of the run's), so one transfer failing for its own
    // reasons cannot hold the day for good.
    const ofPage = items.flatMap((funding) =>
      described.has(funding.id) && funding.transferId !== null ? [funding.transferId] : [],
    );
    const probe = ofPage[Math.floor(Math.random() * ofPage.length)] ?? (await runs.describedTransfer(runId));
    if (!probe) return noneToAsk;
    try {
      await throughGate(gate, () => deps.wallet.retrieveTransfer(probe));
      return true;
    } catch (error) {
      // "No record of it" is the wallet's own word: it answers.
      return isWalletError(error) && error.httpStatus === 404 && error.code === 'TRANSFER_NOT_FOUND';
    }
  }

  /**
   * A page of payments: those not stored yet compared with the audit's executes and the ledger, their lines stored with
   * the run's progress.
   */
  async function settlePaymentsPage(runId: string, page: Awaited<ReturnType<typeof paymentsSucceededOn>>) {
    const stored = await runs.storedItems(
      runId,
      'payment',
      page.items.map((payment) => payment.id),
    );
    const fresh = page.items.filter((payment) => !stored.has(payment.id));
    const [posts, executed] = await Promise.all([
      paymentPosts(
        database,
        fresh.map((payment) => payment.id),
      ),
      executedWalletPayments(
        database,
        fresh.flatMap(({ walletPaymentId, succeededBy }) =>
          walletPaymentId ? [{ walletPaymentId, succeededBy }] : [],
        ),
      ),
    ]);
    const lines = fresh.map((payment) => paymentLine(payment, executed, posts));
    return { stored: await stopOnNotRunning(() => runs.store(runId, lines)), read: page.items.length, next: page.next };
  }
}
