// Which ops API the CLI talks to and with which key. The URL: --api, else WALLETFLOW_API_URL, else
// the local API. The key never comes from a flag (a flag lands in shell history and `ps`): it is
// WALLETFLOW_OPS_KEY, else the file WALLETFLOW_OPS_KEY_FILE names, else the first entry of
// OPS_API_KEYS / OPS_API_KEYS_FILE (the API's own setting), else the key `walletflow dev` saved
// in .walletflow/dev-state.json, so after `npm run dev` nothing needs setting.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { OpsKeyError, parseOpsKeyEntry } from '../lib/ops-keys.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { projectRoot } from '../lib/project-root.ts';

export interface OpsTarget {
  apiBase: string;
  key: string;
}

const root = projectRoot;

/** Where a key may come from, for messages (never the key itself). */
export const opsKeySources = 'WALLETFLOW_OPS_KEY, WALLETFLOW_OPS_KEY_FILE, OPS_API_KEYS or .walletflow/dev-state.json';

const nonEmpty = (value: string | undefined) => (value !== undefined && value.trim() !== '' ? value.trim() : undefined);

export function resolveApiBase(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const given =
    nonEmpty(flag) ?? nonEmpty(env.WALLETFLOW_API_URL) ?? `http://127.0.0.1:${nonEmpty(env.PORT) ?? '3000'}`;
  let url: URL | undefined;
  try {
    url = new URL(given);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol))
    throw new CliInputError(`--api ${given}: must be an http(s) URL`, exitCodes.usage);
  // The key travels in every request's Authorization header: in clear text only to this machine.
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw new CliInputError(
      `the ops API address ${url.origin} (--api or WALLETFLOW_API_URL): plain http sends the ops key in clear text; use https (http only to this machine)`,
      exitCodes.usage,
    );
  return given.replace(/\/+$/, '');
}

/**
 * Whether a URL's host is surely this machine: localhost, 127.0.0.0/8 or ::1. Not a name under `.localhost`: the
 * system's resolver may ask the network for it. Narrower than lib/config's isLocalHostname on purpose: that one refuses
 * anything that may be this machine (a production check), this one lets a key through only to what surely is.
 */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

function readKeyFile(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new CliInputError(`${variable} ${file} cannot be read`, exitCodes.config);
  }
}

/** The key of the first OPS_API_KEYS entry (`name:scopes:key` or a bare key). */
function firstEntryKey(commaList: string | undefined): string | undefined {
  const entry = commaList
    ?.split(',')
    .map((item) => item.trim())
    .find((item) => item.length > 0);
  if (!entry) return undefined;
  try {
    return parseOpsKeyEntry(entry).key;
  } catch (error) {
    // The entry's own fault, in words that never carry the key (OpsKeyError names an entry by position and name).
    throw new CliInputError(
      error instanceof OpsKeyError
        ? `the first OPS_API_KEYS entry: ${error.message}`
        : 'the first OPS_API_KEYS entry is not name:scopes:key or a bare key',
      exitCodes.config,
    );
  }
}

function devStateKey(env: NodeJS.ProcessEnv): string | undefined {
  const stateDir = path.resolve(nonEmpty(env.WALLETFLOW_STATE_DIR) ?? path.join(root, '.walletflow'));
  const file = path.join(stateDir, 'dev-state.json');
  if (!existsSync(file)) return undefined;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as { opsApiKey?: unknown };
    return typeof state.opsApiKey === 'string' && state.opsApiKey !== '' ? state.opsApiKey : undefined;
  } catch {
    return undefined;
  }
}

export function resolveOpsKey(env: NodeJS.ProcessEnv = process.env): string {
  const keyFile = nonEmpty(env.WALLETFLOW_OPS_KEY_FILE);
  const opsKeysFile = nonEmpty(env.OPS_API_KEYS_FILE);
  const key =
    nonEmpty(env.WALLETFLOW_OPS_KEY) ??
    (keyFile ? nonEmpty(readKeyFile('WALLETFLOW_OPS_KEY_FILE', keyFile).split('\n')[0]) : undefined) ??
    firstEntryKey(env.OPS_API_KEYS) ??
    (opsKeysFile ? firstEntryKey(readKeyFile('OPS_API_KEYS_FILE', opsKeysFile)) : undefined) ??
    devStateKey(env);
  if (!key) {
    throw new CliInputError(
      'no ops API key: set WALLETFLOW_OPS_KEY or WALLETFLOW_OPS_KEY_FILE (a file holding the key), or start `npm run dev` once (it saves a key in .walletflow/dev-state.json)',
      exitCodes.config,
    );
  }
  return key;
}

export function resolveOpsTarget(flags: { api?: string | undefined }, env: NodeJS.ProcessEnv = process.env): OpsTarget {
  return { apiBase: resolveApiBase(flags.api, env), key: resolveOpsKey(env) };
}
