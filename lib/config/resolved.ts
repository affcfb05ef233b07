// requireResolved: what the API and the worker need before they start, on top of loadConfig's
// validation: the production checks, and the services that only `walletflow dev` may leave out.
import { walletServiceVariables } from './environment.ts';
import { ConfigError, type AppConfig, type TemporalSecurity, type WalletServiceConfig } from './load-config.ts';
import { productionProblems } from './production-checks.ts';

/** A config whose embedded defaults have all been resolved, as the API and the worker need it. */
export interface ResolvedConfig extends AppConfig {
  databaseUrl: string;
  temporal: { address: string; namespace: string; taskQueue: string; security: TemporalSecurity };
  wallet: WalletServiceConfig;
  tokenEncryptionKeys: Buffer[];
  fingerprintKey: Buffer;
}

/** For processes that run against concrete services (the API and the worker). */
export function requireResolved(config: AppConfig): ResolvedConfig {
  const problems: string[] = [...productionProblems(config)];
  if (!config.databaseUrl) problems.push('DATABASE_URL: is required (`npm run dev` starts an embedded PostgreSQL)');
  if (!config.temporal.address)
    problems.push('TEMPORAL_ADDRESS: is required (`npm run dev` starts the Temporal dev server)');
  if (!config.wallet)
    problems.push(`${walletServiceVariables.join(', ')}: are required (\`npm run dev\` starts the sandbox)`);
  if (!config.tokenEncryptionKeys) problems.push('TOKEN_ENCRYPTION_KEY: is required (32 bytes, base64)');
  else if (!config.fingerprintKey) problems.push('IDEMPOTENCY_FINGERPRINT_KEY: is required (32 bytes, base64)');
  if (problems.length > 0) throw new ConfigError(problems);
  return config as ResolvedConfig;
}
