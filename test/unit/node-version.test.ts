// The suite runs on the project's own Node.js (the `node` devDependency, .nvmrc), not on whatever
// the system has: scripts/test.sh puts node_modules/.bin first on PATH, and every child process the
// tests start uses process.execPath.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

it('runs on the Node.js major of .nvmrc', () => {
  const wanted = readFileSync(path.join(root, '.nvmrc'), 'utf8').trim();
  expect(process.versions.node.split('.')[0]).toBe(wanted.split('.')[0]);
});
