// The run's adjustable behaviour (processing delay, transfer expiry, merchant fee, the partner's
// funding balance, where the launcher reads partner balances): from SANDBOX_* variables at start
// and PUT /_sandbox/settings at run time.
import { z } from 'zod';
import { phpDecimalSchema } from './amounts.ts';
import type { SandboxSettings } from './state.ts';

export const settingsUpdateSchema = z
  .object({
    processingDelayMs: z.number().int().min(0).max(3_600_000),
    transferExpirySeconds: z.number().int().positive().nullable(),
    merchantFee: phpDecimalSchema,
    partnerFundingBalance: phpDecimalSchema,
    partnerBalances: z
      .object({
        accountsUrl: z.url({ protocol: /^https?$/, error: 'accountsUrl must be an http(s) URL' }).max(2048),
        opsKey: z.string().regex(/^[\x21-\x7e]{16,512}$/, 'opsKey must be 16 to 512 printable characters'),
      })
      .strict()
      .nullable(),
  })
  .partial()
  .strict();

/** The settings as the admin API answers them: the partner balances' ops key is never echoed. */
export function publicSettings(
  settings: SandboxSettings,
): Omit<SandboxSettings, 'partnerBalances'> & { partnerBalances: { accountsUrl: string; opsKey: 'set' } | null } {
  const { partnerBalances, ...rest } = settings;
  return {
    ...rest,
    partnerBalances: partnerBalances ? { accountsUrl: partnerBalances.accountsUrl, opsKey: 'set' } : null,
  };
}

function envNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}

/** SANDBOX_PROCESSING_DELAY_MS, SANDBOX_TRANSFER_EXPIRY_SECONDS, SANDBOX_MERCHANT_FEE. */
export function settingsFromEnv(env: NodeJS.ProcessEnv): Partial<SandboxSettings> {
  const settings: Partial<SandboxSettings> = {};
  const delay = envNumber(env, 'SANDBOX_PROCESSING_DELAY_MS');
  if (delay !== undefined) settings.processingDelayMs = delay;
  const expiry = envNumber(env, 'SANDBOX_TRANSFER_EXPIRY_SECONDS');
  if (expiry !== undefined && expiry > 0) settings.transferExpirySeconds = expiry;
  const fee = env.SANDBOX_MERCHANT_FEE?.trim();
  if (fee !== undefined && fee !== '') {
    const parsed = phpDecimalSchema.safeParse(fee);
    if (!parsed.success) throw new Error('SANDBOX_MERCHANT_FEE must be a PHP decimal string such as "5.00"');
    settings.merchantFee = parsed.data;
  }
  return settings;
}
