// `walletflow config check`: the configuration read as the API and the worker read it at start (every name, and in
// production the production checks), with nothing started and nothing changed. A deploy runs it on the new build's
// image first (docs/running-at-scale.md): a setting the new build refuses (one the previous release took) stops the
// deploy before its migrations, not after them with the new workers exiting 78. A refusal exits 78 with every
// problem (cli/main.ts).
import { ConfigError, loadConfig, requireResolved } from '../lib/config.ts';
import { tracedBundleProblem } from '../lib/tracing-bundle.ts';

/** What the check says of a configuration that passes; throws ConfigError with every problem otherwise. */
export function checkConfiguration(env: Record<string, string | undefined> = process.env): string {
  const config = requireResolved(loadConfig(env));
  // The worker's own check at start besides the configuration's (WALLET_TIMEOUT_MS's bound is the configuration's).
  const traced = tracedBundleProblem(config);
  if (traced) throw new ConfigError([traced]);
  return config.nodeEnv === 'production'
    ? 'configuration: ok, the production checks passed'
    : `configuration: ok (NODE_ENV=${config.nodeEnv}: the production checks did not apply)`;
}

export function runConfigCheck(): void {
  console.log(checkConfiguration());
}
