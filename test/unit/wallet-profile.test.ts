// Profile decryption: a JWE built here with node:crypto around a JWS built with jose, every scope,
// and the refusals (decompression bomb, algorithm outside the allow-list, bad signature).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ProfileError, createProfileReader } from '../../wallet/profile.ts';
import type { ProfileReader } from '../../wallet/profile.ts';
import { encryptProfileJwe, generateProfileTestKeys, signProfile } from '../support/wallet-profile-jwe.ts';
import type { ProfileTestKeys } from '../support/wallet-profile-jwe.ts';

const fullProfile = {
  id: 'user-1',
  profileId: '100200300',
  kycStatus: 'KYC1',
  name: { firstName: 'Maria', middleName: null, lastName: 'Santos', verificationStatus: 'PASS' },
  birthDetails: { birthDate: '01-31-1990', city: 'Cebu', nationality: 'PH', country: 'PH', verificationStatus: null },
  contact: [
    { type: 'MSISDN', subType: 'PRIMARY', value: '+639171234567', verificationStatus: 'PASS' },
    { type: 'EMAIL', subType: 'RECOVERY', value: 'maria@example.com', verificationStatus: null },
  ],
  address: [
    {
      type: 'PRESENT',
      line1: '1 Rizal St',
      line2: 'Unit 2',
      locality: 'Lahug',
      city: 'Cebu City',
      province: 'Cebu',
      region: 'VII',
      country: 'PH',
      zipCode: '6000',
      verificationStatus: 'FAILED',
    },
  ],
  workDetails: {
    natureOfWork: 'SOFTWARE',
    natureOfWorkDetails: null,
    sourceOfIncome: 'SALARY',
    sourceOfIncomeDetails: 'monthly',
    verificationStatus: null,
  },
  identityDocument: [
    {
      type: 'PASSPORT',
      value: null,
      frontUrl: 'https://storage.example/front?sig=1',
      backUrl: null,
      expiryDate: '12-31-2030',
      verificationStatus: 'PASS',
    },
  ],
};

let keys: ProfileTestKeys;
let reader: ProfileReader;

beforeAll(() => {
  keys = generateProfileTestKeys();
  reader = createProfileReader({ decryptionJwk: keys.decryptionJwk, verificationJwk: keys.verificationJwk });
});

async function profileData(payload: unknown, header?: Record<string, unknown>): Promise<string> {
  const jws = await signProfile(payload, keys.secret);
  return encryptProfileJwe(jws, keys.publicKey, header ? { header } : {});
}

async function expectProfileError(data: string, code: string) {
  const error: unknown = await reader.read(data).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(ProfileError);
  expect((error as ProfileError).code).toBe(code);
}

describe('profile decryption', () => {
  it('reads a profile with every scope', async () => {
    const profile = await reader.read(await profileData(fullProfile));
    expect(profile).toEqual(fullProfile);
  });

  it('returns only the openid fields when only openid was granted, tolerating unknown fields', async () => {
    const profile = await reader.read(
      await profileData({ id: 'user-2', profileId: '7', kycStatus: 'KYC0', somethingNew: { x: 1 } }),
    );
    expect(profile).toEqual({ id: 'user-2', profileId: '7', kycStatus: 'KYC0' });
    expect(Object.keys(profile)).toEqual(['id', 'profileId', 'kycStatus']);
  });

  it.each(['name', 'birthDetails', 'contact', 'address', 'workDetails', 'identityDocument'] as const)(
    'reads the %s scope alone',
    async (part) => {
      const payload = { id: 'u', profileId: 'p', kycStatus: 'KYC1', [part]: fullProfile[part] };
      expect(await reader.read(await profileData(payload))).toEqual(payload);
    },
  );

  it('reads absent nullable fields as null', async () => {
    const profile = await reader.read(
      await profileData({ id: 'u', profileId: 'p', kycStatus: 'KYC1', name: { firstName: 'A', lastName: 'B' } }),
    );
    expect(profile.name).toEqual({ firstName: 'A', middleName: null, lastName: 'B', verificationStatus: null });
  });

  it('accepts an uncompressed JWE', async () => {
    const data = await profileData(fullProfile, { alg: 'RSA-OAEP', enc: 'A256GCM' });
    expect(await reader.read(data)).toEqual(fullProfile);
  });

  it('refuses a decompression bomb before inflating it all', async () => {
    const jws = await signProfile(
      { id: 'u', profileId: 'p', kycStatus: 'KYC1', padding: 'a'.repeat(10 * 1024 * 1024) },
      keys.secret,
    );
    const data = encryptProfileJwe(jws, keys.publicKey);
    expect(data.length).toBeLessThan(100_000); // ~10 MiB of plaintext in a few KiB
    await expectProfileError(data, 'PROFILE_TOO_LARGE');
  });

  it.each([
    [{ alg: 'RSA-OAEP-256', enc: 'A256GCM', zip: 'DEF' }],
    [{ alg: 'RSA1_5', enc: 'A256GCM', zip: 'DEF' }],
    [{ alg: 'RSA-OAEP', enc: 'A128GCM', zip: 'DEF' }],
    [{ alg: 'RSA-OAEP', enc: 'A256GCM', zip: 'GZIP' }],
    [{ alg: 'dir', enc: 'A256GCM' }],
  ])('refuses a JWE header outside the allow-list: %o', async (header) => {
    await expectProfileError(await profileData(fullProfile, header), 'PROFILE_DECRYPTION_FAILED');
  });

  it('refuses data encrypted to another key', async () => {
    const other = generateProfileTestKeys();
    const jws = await signProfile(fullProfile, keys.secret);
    await expectProfileError(encryptProfileJwe(jws, other.publicKey), 'PROFILE_DECRYPTION_FAILED');
  });

  it('refuses a tampered ciphertext', async () => {
    const parts = (await profileData(fullProfile)).split('.');
    const ciphertext = Buffer.from(parts[3] ?? '', 'base64url');
    ciphertext[0] = (ciphertext[0] ?? 0) ^ 1;
    parts[3] = ciphertext.toString('base64url');
    await expectProfileError(parts.join('.'), 'PROFILE_DECRYPTION_FAILED');
  });

  it('refuses data that is not a JWE', async () => {
    await expectProfileError('not-a-jwe', 'PROFILE_DECRYPTION_FAILED');
  });

  it('refuses a JWS signed with another secret', async () => {
    const jws = await signProfile(fullProfile, randomBytes(32));
    await expectProfileError(encryptProfileJwe(jws, keys.publicKey), 'PROFILE_SIGNATURE_INVALID');
  });

  it('refuses a JWS signed with another algorithm (HS512), even with the right secret', async () => {
    const jws = await signProfile(fullProfile, keys.secret, 'HS512');
    await expectProfileError(encryptProfileJwe(jws, keys.publicKey), 'PROFILE_SIGNATURE_INVALID');
  });

  it('refuses an unsigned JWS (alg none)', async () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const jws = `${encode({ alg: 'none' })}.${encode(fullProfile)}.`;
    await expectProfileError(encryptProfileJwe(jws, keys.publicKey), 'PROFILE_SIGNATURE_INVALID');
  });

  it('refuses a profile that does not match the interface', async () => {
    await expectProfileError(await profileData({ id: 'u', profileId: 'p', kycStatus: 'KYC9' }), 'PROFILE_INVALID');
    await expectProfileError(await profileData({ id: 'u', kycStatus: 'KYC1' }), 'PROFILE_INVALID');
    await expectProfileError(
      await profileData({
        id: 'u',
        profileId: 'p',
        kycStatus: 'KYC1',
        birthDetails: { ...fullProfile.birthDetails, birthDate: '1990-01-31' },
      }),
      'PROFILE_INVALID',
    );
  });

  it('never puts profile content in an error message', async () => {
    const error = (await reader
      .read(await profileData({ id: 'secret-id-42', profileId: 'p', kycStatus: 'KYC7' }))
      .catch((caught: unknown) => caught)) as Error;
    expect(error.message).not.toContain('secret-id-42');
    expect(error.message).not.toContain('KYC7');
  });
});
