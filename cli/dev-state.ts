// What `walletflow dev` keeps between runs in .walletflow/dev-state.json (mode 0600): the
// generated ops API key, the token encryption key and the sandbox's partner registration, so a
// second start reuses the same credentials and the encrypted data stays readable.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const devStateSchema = z.object({
  opsApiKey: z.string().min(32),
  tokenEncryptionKey: z.string().min(40),
  sandboxRegistration: z.record(z.string(), z.unknown()).optional(),
});
export type DevState = z.infer<typeof devStateSchema>;

export async function loadDevState(stateDir: string): Promise<DevState> {
  const file = path.join(stateDir, 'dev-state.json');
  if (existsSync(file)) {
    const parsed = devStateSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (parsed.success) return parsed.data;
  }
  const fresh: DevState = {
    opsApiKey: `wf_dev_${randomBytes(24).toString('base64url')}`,
    tokenEncryptionKey: randomBytes(32).toString('base64'),
  };
  await saveDevState(stateDir, fresh);
  return fresh;
}

export async function saveDevState(stateDir: string, state: DevState): Promise<void> {
  await mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, 'dev-state.json');
  await writeFile(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}
