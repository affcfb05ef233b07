// The one place configuration is read: a zod schema over the environment (names fixed by
// contract-decisions section 1). A bad or missing value stops start-up with a message naming the
// variable. Secrets may come from files through the same name with `_FILE` appended.
// The entry callers import; the parts live in lib/config/:
//   parsers.ts            how one variable's text is read (URLs, keys, amounts, flags, …)
//   environment.ts        every variable, its parser and default: the schema
//   load-config.ts        loadConfig: the schema's result shaped into AppConfig
//   production-checks.ts  what production refuses that development allows
//   resolved.ts           requireResolved: what the API and the worker need to start
export { isAddressOrCidr } from './config/parsers.ts';
export {
  defaultRateLimits,
  environmentSchema,
  secretVariables,
  walletServiceVariables,
  walletUrlVariables,
  type Environment,
} from './config/environment.ts';
export {
  ConfigError,
  loadConfig,
  withSecretFilesRead,
  type AppConfig,
  type ConsoleConfig,
  type TemporalSecurity,
  type TracingConfig,
  type WalletServiceConfig,
} from './config/load-config.ts';
export { isLocalHostname, productionProblems } from './config/production-checks.ts';
export { requireResolved, type ResolvedConfig } from './config/resolved.ts';
