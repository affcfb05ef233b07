// Test users' profile data: its stored shape, the admin override schema and realistic defaults
// generated from the mobile number and names, rendered per scope as GET /op/profile returns it.
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';

const verificationStatus = z.enum(['PASS', 'FAILED']).nullable();
const datePattern = /^(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])-\d{4}$/;
const mmddyyyy = z.string().regex(datePattern, 'dates are MM-dd-YYYY');

const nameSchema = z.object({
  firstName: z.string().min(1),
  middleName: z.string().nullable(),
  lastName: z.string().min(1),
  verificationStatus,
});
const birthDetailsSchema = z.object({
  birthDate: mmddyyyy,
  city: z.string(),
  nationality: z.string(),
  country: z.string(),
  verificationStatus,
});
const contactSchema = z.object({
  // The interface spells the mobile type MSISD in its value list and MSISDN in its description;
  // the sandbox writes MSISDN and accepts both.
  type: z.enum(['EMAIL', 'MSISDN', 'MSISD']),
  subType: z.enum(['PRIMARY', 'RECOVERY']),
  value: z.string().min(1),
  verificationStatus,
});
const addressSchema = z.object({
  type: z.enum(['PRESENT', 'PERMANENT']),
  line1: z.string(),
  line2: z.string(),
  locality: z.string(),
  city: z.string(),
  province: z.string(),
  region: z.string(),
  country: z.string().regex(/^[A-Z]{2,3}$/, 'a country code such as PH'),
  zipCode: z.string(),
  verificationStatus,
});
const workDetailsSchema = z.object({
  natureOfWork: z.string(),
  natureOfWorkDetails: z.string().nullable(),
  sourceOfIncome: z.string(),
  sourceOfIncomeDetails: z.string().nullable(),
  verificationStatus,
});
/** An identity document as the admin gives it: images (front/back URLs) or a plain value. */
const identityDocumentInputSchema = z.object({
  type: z.string().min(1),
  value: z.string().nullable().default(null),
  images: z.boolean().default(true),
  expiryDate: mmddyyyy,
  verificationStatus: verificationStatus.default('PASS'),
});

export const profileOverrideSchema = z
  .object({
    name: nameSchema.partial(),
    birthDetails: birthDetailsSchema.partial(),
    contact: z.array(contactSchema),
    address: z.array(addressSchema),
    workDetails: workDetailsSchema.partial(),
    identityDocument: z.array(identityDocumentInputSchema),
  })
  .partial()
  .strict();
export type ProfileOverride = z.infer<typeof profileOverrideSchema>;

export interface StoredIdentityDocument {
  documentId: string;
  type: string;
  value: string | null;
  /** When true the profile carries pre-signed front and back image URLs instead of value. */
  images: boolean;
  expiryDate: string;
  verificationStatus: 'PASS' | 'FAILED' | null;
}

export interface StoredProfile {
  name: z.infer<typeof nameSchema>;
  birthDetails: z.infer<typeof birthDetailsSchema>;
  contact: z.infer<typeof contactSchema>[];
  address: z.infer<typeof addressSchema>[];
  workDetails: z.infer<typeof workDetailsSchema>;
  identityDocument: StoredIdentityDocument[];
}

const firstNames = ['Maria', 'Jose', 'Ana', 'Juan', 'Liza', 'Paolo', 'Carmela', 'Ramon', 'Teresa', 'Miguel'];
const lastNames = [
  'Santos',
  'Reyes',
  'Cruz',
  'Bautista',
  'Garcia',
  'Mendoza',
  'Torres',
  'Flores',
  'Villanueva',
  'Ramos',
];
const cities = [
  { city: 'Quezon City', province: 'Metro Manila', region: 'NCR', zipCode: '1100' },
  { city: 'Cebu City', province: 'Cebu', region: 'Region VII', zipCode: '6000' },
  { city: 'Davao City', province: 'Davao del Sur', region: 'Region XI', zipCode: '8000' },
  { city: 'Makati', province: 'Metro Manila', region: 'NCR', zipCode: '1200' },
];

/** A stable number from the mobile, so the same mobile always gets the same default profile. */
function pick<T>(list: readonly T[], seed: Buffer, index: number): T {
  const item = list[(seed[index] ?? 0) % list.length];
  if (item === undefined) throw new Error('empty list');
  return item;
}

export function defaultProfile(
  mobile: string,
  names: { firstName?: string | undefined; lastName?: string | undefined },
): StoredProfile {
  const seed = createHash('sha256').update(mobile).digest();
  const firstName = names.firstName ?? pick(firstNames, seed, 0);
  const lastName = names.lastName ?? pick(lastNames, seed, 1);
  const place = pick(cities, seed, 2);
  const month = String(((seed[3] ?? 0) % 12) + 1).padStart(2, '0');
  const day = String(((seed[4] ?? 0) % 28) + 1).padStart(2, '0');
  const year = 1970 + ((seed[5] ?? 0) % 35);
  const email = `${firstName}.${lastName}`.toLowerCase().replace(/[^a-z.]/g, '') + `.${mobile.slice(-4)}@example.com`;
  return {
    name: { firstName, middleName: null, lastName, verificationStatus: 'PASS' },
    birthDetails: {
      birthDate: `${month}-${day}-${year}`,
      city: place.city,
      nationality: 'Filipino',
      country: 'PH',
      verificationStatus: 'PASS',
    },
    contact: [
      { type: 'MSISDN', subType: 'PRIMARY', value: mobile, verificationStatus: 'PASS' },
      { type: 'EMAIL', subType: 'PRIMARY', value: email, verificationStatus: null },
    ],
    address: [
      {
        type: 'PRESENT',
        line1: `${(seed[6] ?? 1) + 1} Mabini Street`,
        line2: 'Unit 4B',
        locality: 'Barangay San Roque',
        city: place.city,
        province: place.province,
        region: place.region,
        country: 'PH',
        zipCode: place.zipCode,
        verificationStatus: 'PASS',
      },
    ],
    workDetails: {
      natureOfWork: 'PRIVATE_EMPLOYEE',
      natureOfWorkDetails: 'Office staff',
      sourceOfIncome: 'SALARY',
      sourceOfIncomeDetails: null,
      verificationStatus: null,
    },
    identityDocument: [
      {
        documentId: randomUUID(),
        type: 'PASSPORT',
        value: null,
        images: true,
        expiryDate: `${month}-${day}-${new Date().getUTCFullYear() + 5}`,
        verificationStatus: 'PASS',
      },
    ],
  };
}

/** Applies an admin override on top of a default profile. */
export function applyProfileOverride(base: StoredProfile, override: ProfileOverride | undefined): StoredProfile {
  if (override === undefined) return base;
  return {
    name: { ...base.name, ...override.name },
    birthDetails: { ...base.birthDetails, ...override.birthDetails },
    contact: override.contact ?? base.contact,
    address: override.address ?? base.address,
    workDetails: { ...base.workDetails, ...override.workDetails },
    identityDocument:
      override.identityDocument?.map((document) => ({
        documentId: randomUUID(),
        type: document.type,
        value: document.images ? null : document.value,
        images: document.images,
        expiryDate: document.expiryDate,
        verificationStatus: document.verificationStatus,
      })) ?? base.identityDocument,
  };
}

export interface ProfileSubject {
  userId: string;
  profileId: string;
  kycLevel: 'KYC0' | 'KYC1';
  profile: StoredProfile;
}

/** The raw profile JSON for the given scopes, with fresh pre-signed image URLs. */
export function renderProfile(
  subject: ProfileSubject,
  scopes: readonly string[],
  documentUrl: (documentId: string, side: 'front' | 'back') => string,
): Record<string, unknown> {
  const profile: Record<string, unknown> = {
    id: subject.userId,
    profileId: subject.profileId,
    kycStatus: subject.kycLevel,
  };
  const { profile: stored } = subject;
  if (scopes.includes('profile')) {
    profile.name = stored.name;
    profile.birthDetails = stored.birthDetails;
  }
  if (scopes.includes('contact')) profile.contact = stored.contact;
  if (scopes.includes('address')) profile.address = stored.address;
  if (scopes.includes('workDetails')) profile.workDetails = stored.workDetails;
  if (scopes.includes('identity_document')) {
    profile.identityDocument = stored.identityDocument.map((document) => ({
      type: document.type,
      value: document.images ? null : document.value,
      frontUrl: document.images ? documentUrl(document.documentId, 'front') : null,
      backUrl: document.images ? documentUrl(document.documentId, 'back') : null,
      expiryDate: document.expiryDate,
      verificationStatus: document.verificationStatus,
    }));
  }
  return profile;
}
