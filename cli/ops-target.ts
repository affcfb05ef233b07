// Which ops API the CLI talks to and with which key: flags first, then the environment, then the
// key `walletflow dev` saved in .walletflow/dev-state.json, so after `npm run dev` no flag is needed.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { projectRoot } from '../lib/project-root.ts';

export interface OpsTarget {
  apiBase: string;
  key: string;
}

const root = projectRoot;

const apiBaseSchema = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).transform((value) => value.replace(/\/+$/, ''));
const devStateKeySchema = z.object({ opsApiKey: z.string().min(1) });

const nonEmpty = (value: string | undefined) => (value !== undefined && value.trim() !== '' ? value.trim() : undefined);

export function resolveApiBase(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const given = nonEmpty(flag) ?? nonEmpty(env.WALLETFLOW_API_URL) ?? `http://127.0.0.1:${nonEmpty(env.PORT) ?? '3000'}`;
  const parsed = apiBaseSchema.safeParse(given);
  if (!parsed.success) throw new CliInputError(`--api ${given}: ${parsed.error.issues[0]?.message ?? 'not a URL'}`, exitCodes.usage);
  return parsed.data;
}

function firstOf(commaList: string | undefined): string | undefined {
  return commaList
    ?.split(',')
    .map((item) => item.trim())
    .find((item) => item.length > 0);
}

function opsKeysFromFile(env: NodeJS.ProcessEnv): string | undefined {
  const file = nonEmpty(env.OPS_API_KEYS_FILE);
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new CliInputError(`OPS_API_KEYS_FILE ${file} cannot be read`, exitCodes.config);
  }
}

function devStateKey(env: NodeJS.ProcessEnv): string | undefined {
  const stateDir = path.resolve(nonEmpty(env.WALLETFLOW_STATE_DIR) ?? path.join(root, '.walletflow'));
  const file = path.join(stateDir, 'dev-state.json');
  if (!existsSync(file)) return undefined;
  try {
    const parsed = devStateKeySchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data.opsApiKey : undefined;
  } catch {
    return undefined;
  }
}

export function resolveOpsKey(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const key =
    nonEmpty(flag) ?? nonEmpty(env.WALLETFLOW_OPS_KEY) ?? firstOf(env.OPS_API_KEYS) ?? firstOf(opsKeysFromFile(env)) ?? devStateKey(env);
  if (!key) {
    throw new CliInputError(
      'no ops API key: pass --key, set WALLETFLOW_OPS_KEY or OPS_API_KEYS, or start `npm run dev` once (it saves a key in .walletflow/dev-state.json)',
      exitCodes.config,
    );
  }
  return key;
}

export function resolveOpsTarget(flags: { api?: string | undefined; key?: string | undefined }, env: NodeJS.ProcessEnv = process.env): OpsTarget {
  return { apiBase: resolveApiBase(flags.api, env), key: resolveOpsKey(flags.key, env) };
}
