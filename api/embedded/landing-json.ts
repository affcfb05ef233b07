// The JSON the landing pages' own scripts poll (assets/loading.js, home.js, progress.js): one zod
// schema per shape, the types inferred from them, and the one type every JSON answer of /app has.
import { z } from 'zod';
import type { OutcomeStatus } from './outcome-messages.ts';

/** GET /app/status: the web session's onboarding, for the loading page's poll. */
export const appSessionStateSchema = z.object({ state: z.enum(['pending', 'ready', 'failed']) });
export type AppSessionState = z.infer<typeof appSessionStateSchema>;

/** The status polls' JSON refusals (401, 404, 429, …): `{ code, message }`, never a page. */
export const appJsonErrorSchema = z.object({ code: z.string(), message: z.string() });
export type AppJsonError = z.infer<typeof appJsonErrorSchema>;

/** GET /app/activity: the money page's recent fundings and payments, for its live states. */
export const appActivitySchema = z.object({
  available: z.string(),
  items: z.array(
    z.object({
      kind: z.enum(['withdrawal', 'deposit', 'payment']),
      id: z.string(),
      status: z.string(),
      final: z.boolean(),
      amount: z.string(),
      at: z.string(),
    }),
  ),
});
export type AppActivity = z.infer<typeof appActivitySchema>;

/** Any JSON answer under /app (the progress pages' polls answer an OutcomeStatus). */
export type AppJson = AppSessionState | AppJsonError | OutcomeStatus | AppActivity;
