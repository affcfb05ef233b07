// A decrypted profile split by the scope that grants each part (interface, "Profile … by
// scope"): which scopes a profile shows, and the fields of each.
import { z } from 'zod';
import {
  addressSchema,
  contactSchema,
  identityDocumentSchema,
  profileSchema,
  workDetailsSchema,
  type Profile,
} from './profile-schema.ts';

export const profileScopes = ['openid', 'profile', 'contact', 'address', 'workDetails', 'identity_document'] as const;
export type ProfileScope = (typeof profileScopes)[number];

export const profileByScopeSchema = z.object({
  openid: profileSchema.pick({ id: true, profileId: true, kycStatus: true }),
  profile: profileSchema.pick({ name: true, birthDetails: true }).optional(),
  contact: z.object({ contact: z.array(contactSchema) }).optional(),
  address: z.object({ address: z.array(addressSchema) }).optional(),
  workDetails: z.object({ workDetails: workDetailsSchema }).optional(),
  identity_document: z.object({ identityDocument: z.array(identityDocumentSchema) }).optional(),
});
export type ProfileByScope = z.output<typeof profileByScopeSchema>;

/** The profile's parts, keyed by the scope that granted them; absent scopes are left out. */
export function profileByScope(profile: Profile): ProfileByScope {
  const parts: ProfileByScope = {
    openid: { id: profile.id, profileId: profile.profileId, kycStatus: profile.kycStatus },
  };
  if (profile.name || profile.birthDetails) parts.profile = { name: profile.name, birthDetails: profile.birthDetails };
  if (profile.contact) parts.contact = { contact: profile.contact };
  if (profile.address) parts.address = { address: profile.address };
  if (profile.workDetails) parts.workDetails = { workDetails: profile.workDetails };
  if (profile.identityDocument) parts.identity_document = { identityDocument: profile.identityDocument };
  return parts;
}

/** The scopes a profile shows were granted (openid always). */
export function scopesOf(profile: Profile): ProfileScope[] {
  const parts = profileByScope(profile);
  return profileScopes.filter((scope) => parts[scope] !== undefined);
}
