// Readiness of the wallet service: each of its three base URLs answers HTTP at all. No credentials
// are sent and no call with an effect is made; any HTTP answer below 500 counts as reachable.
import { request } from 'undici';

export interface WalletServiceUrls {
  connectUrl: string;
  opUrl: string;
  transferUrl: string;
}

export async function checkWalletServiceReachable(urls: WalletServiceUrls, timeoutMs = 2000): Promise<void> {
  const targets = { connect: urls.connectUrl, op: urls.opUrl, transfers: urls.transferUrl };
  const failures: string[] = [];
  await Promise.all(
    Object.entries(targets).map(async ([service, url]) => {
      try {
        const response = await request(url, {
          method: 'GET',
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          signal: AbortSignal.timeout(timeoutMs),
        });
        await response.body.dump();
        if (response.statusCode >= 500) failures.push(`${service} answered ${response.statusCode}`);
      } catch (error) {
        failures.push(`${service} unreachable (${(error as { code?: string }).code ?? (error as Error).name})`);
      }
    }),
  );
  if (failures.length > 0) throw new Error(failures.sort().join('; '));
}
