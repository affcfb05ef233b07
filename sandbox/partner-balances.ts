// The launcher's partner balances: what the partner owes each test user, read over HTTP from the
// partner's ops API (GET {accountsUrl}wallet:{profileId}, the embedded-app user's partner user id,
// contract-decisions section 10). The sandbox never imports partner code: it learns balances the
// way any outside client would, with the read-only ops key its settings hold (PUT
// /_sandbox/settings `partnerBalances`, set by `walletflow dev`). The key goes only into the
// Authorization header of these calls: never into a page, a log line or the settings' answer.
import { z } from 'zod';
import type { PartnerBalancesSetting } from './state.ts';

const accountSchema = z.object({
  available: z.object({ currency: z.string().max(8), value: z.string().regex(/^-?\d{1,16}(\.\d{1,3})?$/) }),
});

export type PartnerBalance = { ok: true; currency: string; value: string } | { ok: false; reason: string };

/** The embedded-app user's partner user id (unless the partner maps it otherwise). */
export const partnerUserIdOf = (profileId: string) => `wallet:${profileId}`;

/** Each profile's available partner balance, read in parallel, each within `timeoutMs`. */
export async function readPartnerBalances(
  setting: PartnerBalancesSetting,
  profileIds: string[],
  timeoutMs = 2000,
): Promise<Map<string, PartnerBalance>> {
  const entries = await Promise.all(
    profileIds.map(async (profileId): Promise<[string, PartnerBalance]> => {
      try {
        const response = await fetch(`${setting.accountsUrl}${encodeURIComponent(partnerUserIdOf(profileId))}`, {
          headers: { authorization: `Bearer ${setting.opsKey}`, accept: 'application/json' },
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'error',
        });
        if (response.status !== 200) {
          await response.body?.cancel();
          return [profileId, { ok: false, reason: `the partner answered ${response.status}` }];
        }
        const parsed = accountSchema.safeParse(await response.json());
        return [
          profileId,
          parsed.success
            ? { ok: true, ...parsed.data.available }
            : { ok: false, reason: 'the partner’s answer is not an account' },
        ];
      } catch {
        return [profileId, { ok: false, reason: 'the partner did not answer' }];
      }
    }),
  );
  return new Map(entries);
}
