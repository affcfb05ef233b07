#!/usr/bin/env node
// The `walletflow` command: the compiled JavaScript under dist/ when it has been built
// (`npm run build`; the production image), else the TypeScript sources through tsx's loader.
// WALLETFLOW_FROM_SOURCE=1 runs the sources even when dist/ exists.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/main.js', import.meta.url);
if (process.env.WALLETFLOW_FROM_SOURCE !== '1' && existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
}
