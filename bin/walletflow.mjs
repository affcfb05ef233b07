#!/usr/bin/env node
// The `walletflow` command: TypeScript sources run through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
