// Test users and their cash-in codes: creation from the admin API or the registration form,
// and the views the admin API and pages show.
import { randomInt, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { phpDecimalSchema } from './amounts.ts';
import { serviceError } from './answers.ts';
import type { SandboxContext } from './context.ts';
import { lifetimes } from './lifetimes.ts';
import { applyProfileOverride, defaultProfile, profileOverrideSchema, renderProfile } from './profiles.ts';
import type { CashInCodeRecord, SandboxUser } from './state.ts';

/** Password of users created without one (documented on the sandbox index page). */
export const defaultPassword = 'sandbox123';
export const defaultWalletLimit = '100000.00';

export const mobileSchema = z.string().regex(/^\+?\d{7,15}$/, 'mobile must be 7 to 15 digits, optionally after +');

export const createUserSchema = z
  .object({
    mobile: mobileSchema,
    password: z.string().min(1).max(200).optional(),
    kycLevel: z.enum(['KYC0', 'KYC1']).default('KYC0'),
    balance: phpDecimalSchema.default('0.00'),
    walletLimit: phpDecimalSchema.optional(),
    blocked: z.boolean().default(false),
    isPartnerAccount: z.boolean().default(false),
    firstName: z.string().min(1).max(100).optional(),
    lastName: z.string().min(1).max(100).optional(),
    profile: profileOverrideSchema.optional(),
  })
  .strict();
export type CreateUserInput = z.input<typeof createUserSchema>;

function uniqueProfileId(context: SandboxContext): string {
  const taken = new Set([...context.state.users.values()].map((user) => user.profileId));
  for (;;) {
    const candidate = `${randomInt(1, 10)}${String(randomInt(0, 100_000_000_000)).padStart(11, '0')}`;
    if (!taken.has(candidate)) return candidate;
  }
}

export function findUserByMobile(context: SandboxContext, mobile: string): SandboxUser | undefined {
  const userId = context.state.userIdByMobile.get(mobile);
  return userId === undefined ? undefined : context.state.users.get(userId);
}

export function createUser(context: SandboxContext, input: z.output<typeof createUserSchema>): SandboxUser {
  if (context.state.userIdByMobile.has(input.mobile)) {
    throw serviceError(409, 'USER_EXISTS', `a user with mobile ${input.mobile} exists`);
  }
  const user: SandboxUser = {
    userId: randomUUID(),
    profileId: uniqueProfileId(context),
    mobile: input.mobile,
    password: input.password ?? defaultPassword,
    kycLevel: input.kycLevel,
    balance: input.balance,
    walletLimit: input.walletLimit ?? defaultWalletLimit,
    blocked: input.blocked,
    isPartnerAccount: input.isPartnerAccount,
    profile: applyProfileOverride(
      defaultProfile(input.mobile, { firstName: input.firstName, lastName: input.lastName }),
      input.profile,
    ),
    createdAt: context.clock.now(),
  };
  context.state.users.set(user.userId, user);
  context.state.userIdByMobile.set(user.mobile, user.userId);
  return user;
}

export function requireUser(context: SandboxContext, userId: string | undefined): SandboxUser {
  const user = userId === undefined ? undefined : context.state.users.get(userId);
  if (!user) throw serviceError(404, 'USER_NOT_FOUND', 'no such user');
  return user;
}

export function userSummary(user: SandboxUser) {
  return {
    userId: user.userId,
    profileId: user.profileId,
    mobile: user.mobile,
    kycLevel: user.kycLevel,
    balance: user.balance,
    walletLimit: user.walletLimit,
    blocked: user.blocked,
    isPartnerAccount: user.isPartnerAccount,
    name: { firstName: user.profile.name.firstName, lastName: user.profile.name.lastName },
    createdAt: new Date(user.createdAt).toISOString(),
  };
}

export function userDetail(user: SandboxUser, documentUrl: (documentId: string, side: 'front' | 'back') => string) {
  return {
    ...userSummary(user),
    profile: renderProfile(
      user,
      ['openid', 'profile', 'contact', 'address', 'workDetails', 'identity_document'],
      documentUrl,
    ),
  };
}

/** A one-time 7-digit cash-in code, valid 30 minutes (contract-decisions section 3). */
export function createCashInCode(context: SandboxContext, user: SandboxUser): CashInCodeRecord {
  let code: string;
  do code = String(randomInt(0, 10_000_000)).padStart(7, '0');
  while (context.state.cashInCodes.has(code));
  const record: CashInCodeRecord = {
    code,
    userId: user.userId,
    expiresAt: context.clock.now() + lifetimes.cashInCode * 1000,
    reservedBy: null,
    consumedBy: null,
  };
  context.state.cashInCodes.set(code, record);
  return record;
}
