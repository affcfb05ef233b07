// The module graph: no import circle anywhere (type-only imports count: a circle of types is still a
// circle to a reader), and the import table of docs/architecture.md is the one ESLint enforces
// (import-rules.js), row for row.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importRules } from '../../import-rules.js';

const root = path.resolve(import.meta.dirname, '../..');

function sourceFiles(): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.mjs', '*.js'],
    { cwd: root, encoding: 'utf8' },
  );
  return listed.split('\n').filter((file) => file && !file.startsWith('node_modules/') && !file.includes('/assets/'));
}

/** Relative specifiers of static imports, re-exports and dynamic imports. */
function importsOf(file: string): string[] {
  const source = readFileSync(path.join(root, file), 'utf8');
  const specifiers: string[] = [];
  for (const match of source.matchAll(
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.\.?\/[^'"]+)['"]|import\(\s*['"](\.\.?\/[^'"]+)['"]\s*\)/gm,
  )) {
    specifiers.push((match[1] ?? match[2])!);
  }
  return specifiers.map((specifier) => path.normalize(path.join(path.dirname(file), specifier)));
}

/** Strongly connected components of more than one module, or a module importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowlinks = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    indices.set(node, index);
    lowlinks.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indices.has(next)) {
        visit(next);
        lowlinks.set(node, Math.min(lowlinks.get(node)!, lowlinks.get(next)!));
      } else if (onStack.has(next)) {
        lowlinks.set(node, Math.min(lowlinks.get(node)!, indices.get(next)!));
      }
    }
    if (lowlinks.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

describe('the module graph', () => {
  it('has no import circle', () => {
    const graph = new Map(sourceFiles().map((file) => [file, importsOf(file)]));
    expect(graph.size).toBeGreaterThan(100);
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one (the check itself works)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(circles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});

describe('the workflow contracts', () => {
  it('own their types: no contract imports activities/ (its input and output are the contract’s, the activity takes them from it)', async () => {
    const { readdirSync } = await import('node:fs');
    const contracts = readdirSync(path.join(root, 'workflows')).filter((file) => file.endsWith('.contract.ts'));
    expect(contracts.length).toBeGreaterThanOrEqual(6);
    const upward = contracts.flatMap((file) =>
      importsOf(path.join('workflows', file))
        .filter((target) => target.startsWith('activities/'))
        .map((target) => `${file} → ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it('declare the activities their workflow schedules: no file in workflows/ imports activities/, not even a type', () => {
    const files = sourceFiles().filter((file) => file.startsWith('workflows/'));
    expect(files.length).toBeGreaterThanOrEqual(12);
    const upward = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith('activities/'))
        .map((target) => `${file} → ${target}`),
    );
    expect(upward).toEqual([]);
  });
});

describe('the import table', () => {
  /** Rows of the table under "## Import rules" in docs/architecture.md: folder → the folders it may import. */
  function documentedTable(): Map<string, string> {
    const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    const section = doc.split(/^## Import rules$/m)[1]?.split(/^## /m)[0] ?? '';
    const rows = new Map<string, string>();
    for (const line of section.split('\n')) {
      const cells = line.split('|').map((cell) => cell.trim());
      const folder = /^`([a-z]+)\/`$/.exec(cells[1] ?? '')?.[1];
      if (folder) rows.set(folder, cells[2] ?? '');
    }
    return rows;
  }

  /** What import-rules.js allows, written as the docs write it. */
  function ruleText(folder: string): string {
    const rule = importRules[folder]!;
    const parts = [
      ...rule.imports.map((other) => `\`${other}/\``),
      ...(rule.typeOnly ?? []).map((other) => `\`${other}/\` (types)`),
      ...(rule.contracts ? ['workflow contracts'] : []),
    ];
    return parts.length ? parts.join(', ') : 'nothing';
  }

  it('in docs/architecture.md is the one ESLint enforces', () => {
    const documented = documentedTable();
    const enforced = Object.keys(importRules).filter((folder) => importRules[folder]!.enforced !== false);
    expect([...documented.keys()].sort()).toEqual([...enforced].sort());
    for (const folder of enforced) expect(documented.get(folder), folder).toBe(ruleText(folder));
  });
});
