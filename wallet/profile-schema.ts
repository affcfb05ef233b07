// The decrypted user profile, one zod schema per scope of the interface. Only `openid` is always
// present; the other parts appear when the partner was granted their scope. Unknown fields pass.
import { z } from 'zod';

/** Nullable in the interface; an absent value is read as null too. */
const nullableText = z
  .string()
  .nullish()
  .transform((value) => value ?? null);
const verificationStatus = z
  .enum(['PASS', 'FAILED'])
  .nullish()
  .transform((value) => value ?? null);
/** MM-dd-YYYY, as the interface writes birth and expiry dates. */
const monthDayYear = z.string().regex(/^\d{2}-\d{2}-\d{4}$/, 'date must be MM-dd-YYYY');

export const nameSchema = z.object({
  firstName: z.string(),
  middleName: nullableText,
  lastName: z.string(),
  verificationStatus,
});

export const birthDetailsSchema = z.object({
  birthDate: monthDayYear,
  city: z.string(),
  nationality: z.string(),
  country: z.string(),
  verificationStatus,
});

export const contactSchema = z.object({
  // The interface spells the mobile type both MSISD and MSISDN.
  type: z.enum(['EMAIL', 'MSISDN', 'MSISD']),
  subType: z.enum(['PRIMARY', 'RECOVERY']),
  value: z.string(),
  verificationStatus,
});

export const addressSchema = z.object({
  type: z.enum(['PRESENT', 'PERMANENT']),
  line1: z.string(),
  line2: z.string(),
  locality: z.string(),
  city: z.string(),
  province: z.string(),
  region: z.string(),
  country: z.string(),
  zipCode: z.string(),
  verificationStatus,
});

export const workDetailsSchema = z.object({
  natureOfWork: z.string(),
  natureOfWorkDetails: nullableText,
  sourceOfIncome: z.string(),
  sourceOfIncomeDetails: nullableText,
  verificationStatus,
});

export const identityDocumentSchema = z.object({
  type: z.string(),
  value: nullableText,
  /** Pre-signed, valid 15 minutes: re-request the profile for fresh URLs. */
  frontUrl: nullableText,
  backUrl: nullableText,
  expiryDate: monthDayYear,
  verificationStatus,
});

export const profileSchema = z.object({
  // scope openid
  id: z.string().min(1),
  profileId: z.string().min(1),
  kycStatus: z.enum(['KYC0', 'KYC1']),
  // scope profile
  name: nameSchema.optional(),
  birthDetails: birthDetailsSchema.optional(),
  // scope contact
  contact: z.array(contactSchema).optional(),
  // scope address
  address: z.array(addressSchema).optional(),
  // scope workDetails
  workDetails: workDetailsSchema.optional(),
  // scope identity_document
  identityDocument: z.array(identityDocumentSchema).optional(),
});

export type Profile = z.output<typeof profileSchema>;
