// Single fundings drawn on the treasury, stored together (docs/fundings.md, Accepted together): the
// requests that arrive while one group's transaction is under way are stored by the next, each row
// with its first event and its hold, the holds in one statement (ledger.holdMany) made last. Every
// treasury funding's hold locks the TREASURY and IN_FLIGHT accounts to its commit, so stored one
// by one they wait for each other; stored together, a burst takes those locks once per group, as a
// batch's items do. One request alone is stored at once. A request waits for its group as long as
// the admission gate would let it wait (then 503 OVERLOADED, nothing stored). A group's rows go in
// in key order (two groups sharing keys never wait on each other's in opposite orders) and share
// their created_at, the transaction's time, as fundings stored in one millisecond do. A group the
// database refuses as a whole stores nothing: the load's refusal is every member's; any other (a
// TREASURY_LIMIT the group does not fit, a member's row refused) sends its fundings to be stored
// one by one by the funding record, each answered for itself.
import { Prisma } from '../generated/prisma/client.ts';
import { maskCashInCode } from '../domain/funding.ts';
import { treasurySource } from '../domain/ledger.ts';
import { toNumeric } from '../domain/money.ts';
import { Overloaded, overloadOf } from '../lib/admission.ts';
import type { Database } from '../lib/database.ts';
import { createGroupCommit } from '../lib/group-commit.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { createLedger, InsufficientFundsError, type Ledger } from '../ledger/ledger.ts';
import { checkFundingAmount, type FundingLimits } from '../ledger/limits.ts';
import { cashInCodeContext, requestedDetail, type NewFunding } from './funding-record.ts';

/** Fundings stored by one transaction at most: a statement of this many rows stays small. */
export const STORED_TOGETHER_MAX = 64;
/** Requests that may wait for a group, and how long each may wait: the API's admission gate's (lib/database.ts). */
export const STORED_TOGETHER_WAIT = { maxWaiting: 2000, maxWaitMs: 5000 };
/** The longest a group's statement waits for a lock before the group is refused (its fundings then go one by one). */
const GROUP_LOCK_TIMEOUT = '5s';

/** A group of one refused for its own sake: answered as the funding record would answer it, not stored again alone. */
class RefusedAlone extends Error {
  constructor(readonly refusal: Error) {
    super(refusal.message);
  }
}

/** A group's outcome for one funding: stored by it, or its key was taken (earlier, or by one of the group). */
type Stored = boolean;

export function createTreasuryFundingsRecord(deps: {
  database: Database;
  cipher: TokenCipher;
  /** The partner's ledger (with TREASURY_LIMIT); absent: one with no treasury limit. */
  ledger?: Ledger;
  /** Section 10's limits; absent: none. */
  limits?: FundingLimits;
  /** Stores one funding alone (the funding record's own insert): a refused group's fundings go there. */
  insertAlone: (funding: NewFunding) => Promise<boolean>;
}) {
  const ledger = deps.ledger ?? createLedger();
  /** One transaction: the rows, their events, then the holds, the last statement before the commit. */
  async function storeGroup(group: readonly NewFunding[]): Promise<Stored[]> {
    const inKeyOrder = [...group].sort((a, b) =>
      a.idempotencyKey < b.idempotencyKey ? -1 : a.idempotencyKey > b.idempotencyKey ? 1 : 0,
    );
    const rows = inKeyOrder.map((funding) => {
      const { id, recipient, amount } = funding;
      return Prisma.sql`(${id}::uuid, ${funding.idempotencyKey}, ${funding.requestFingerprint}, ${funding.workflowId},
        'PENDING'::"FundingStatus", ${recipient.type}::"RecipientType", ${recipient.type === 'TOKEN' ? recipient.linkId : null}::uuid,
        ${recipient.type === 'CODE' ? Buffer.from(deps.cipher.encrypt(recipient.code, cashInCodeContext(id))) : null},
        ${recipient.type === 'CODE' ? maskCashInCode(recipient.code) : null}, ${amount.currency},
        ${toNumeric(amount.thousandths)}::numeric, ARRAY[]::text[], NULL, ${funding.lane ?? null}::smallint, now())`;
    });
    const stored = await deps.database.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT set_config('lock_timeout', ${GROUP_LOCK_TIMEOUT}, true)`;
      const inserted = await tx.$queryRaw<Array<{ id: string }>>`
        INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, link_id,
                             cash_in_code_encrypted, cash_in_code_masked, currency, amount, abandoned_transfer_ids,
                             source_partner_user_id, lane, updated_at)
        VALUES ${Prisma.join(rows)}
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id::text AS id`;
      const ids = new Set(inserted.map((row) => row.id));
      const storedNow = group.filter((funding) => ids.has(funding.id));
      if (storedNow.length === 0) return ids;
      await tx.fundingEvent.createMany({
        data: storedNow.map((funding) => ({
          fundingId: funding.id,
          status: 'PENDING' as const,
          detail: requestedDetail(funding.requestedBy),
        })),
      });
      // One hold statement per currency (one in practice), in a fixed order.
      const currencies = [...new Set(storedNow.map((funding) => funding.amount.currency))].sort();
      for (const currency of currencies)
        await ledger.holdMany(tx, {
          source: treasurySource,
          currency,
          holds: storedNow
            .filter((funding) => funding.amount.currency === currency)
            .map((funding) => ({ fundingId: funding.id, amount: funding.amount.thousandths })),
        });
      return ids;
    });
    return group.map((funding) => stored.has(funding.id));
  }

  const groups = createGroupCommit(
    async (group: readonly NewFunding[]) => {
      try {
        return await storeGroup(group);
      } catch (error) {
        if (group.length === 1 && error instanceof InsufficientFundsError) throw new RefusedAlone(error);
        throw error;
      }
    },
    {
      maxGroup: STORED_TOGETHER_MAX,
      ...STORED_TOGETHER_WAIT,
      refuse: (why) => new Overloaded(Math.ceil(STORED_TOGETHER_WAIT.maxWaitMs / 1000), `not stored: ${why}`),
    },
  );

  return {
    /**
     * Stores a treasury funding with the others arriving now; false when its key was taken. The
     * load's refusal (503 OVERLOADED: the group's, or this request's wait) is every member's; any
     * other refusal of a group of many sends its fundings to be stored one by one, so each gets its
     * own answer (INSUFFICIENT_FUNDS for those the treasury's limit no longer covers); a group of one
     * refused INSUFFICIENT_FUNDS is answered so at once.
     */
    async insert(funding: NewFunding): Promise<boolean> {
      if (funding.source && funding.source.type !== 'TREASURY') throw new RangeError('not a treasury funding');
      // An amount outside the limits is refused by the funding record, as it always was (after a
      // repeated key is answered with its funding).
      if (deps.limits && !withinAmountLimits(deps.limits, funding)) return deps.insertAlone(funding);
      try {
        return await groups.submit(funding);
      } catch (error) {
        if (error instanceof RefusedAlone) throw error.refusal;
        // A write conflict or a deadlock rolled the group back (nothing stored): each is stored alone, as for any other
        // refusal of the group; only load is every member's.
        const busy = overloadOf(error);
        if (busy && !busy.writeConflict) throw error;
        return deps.insertAlone(funding);
      }
    },
  };
}

function withinAmountLimits(limits: FundingLimits, funding: NewFunding): boolean {
  try {
    checkFundingAmount(limits, funding.amount.thousandths, funding.amount.currency);
    return true;
  } catch {
    return false;
  }
}
