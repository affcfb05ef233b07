// The test users `walletflow dev` creates in the sandbox (through its admin API), one for each
// path a demo needs: an upgraded wallet, a wallet that is not upgraded (M133), and a small balance.
export interface SeededUser {
  userId: string;
  mobile: string;
  password: string;
  kycLevel: 'KYC0' | 'KYC1';
  balance: string;
  name: string;
}

const testUsers = [
  { mobile: '09171234567', password: 'sandbox-pass', kycLevel: 'KYC1', balance: '5000.00', firstName: 'Ana', lastName: 'Reyes' },
  { mobile: '09181234567', password: 'sandbox-pass', kycLevel: 'KYC0', balance: '1000.00', firstName: 'Ben', lastName: 'Cruz' },
  { mobile: '09191234567', password: 'sandbox-pass', kycLevel: 'KYC1', balance: '50.00', firstName: 'Carla', lastName: 'Santos' },
] as const;

export async function seedTestUsers(sandboxUrl: string): Promise<SeededUser[]> {
  const seeded: SeededUser[] = [];
  for (const user of testUsers) {
    const response = await fetch(`${sandboxUrl}/_sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(user),
    });
    if (response.status !== 201) {
      throw new Error(`seeding sandbox user ${user.mobile} failed: ${response.status} ${await response.text()}`);
    }
    const created = (await response.json()) as { userId: string };
    seeded.push({
      userId: created.userId,
      mobile: user.mobile,
      password: user.password,
      kycLevel: user.kycLevel,
      balance: user.balance,
      name: `${user.firstName} ${user.lastName}`,
    });
  }
  return seeded;
}
