// Every repository path a comment, a string or a document names still exists, so a moved or renamed
// file cannot leave a stale pointer behind (`cli/stack/` after it became `stack/`). A path here is a
// top-level folder of the repository (read from its root, folders git knows a file in) followed by
// more of a path and a file with a known extension, or a folder written with its trailing slash;
// or a root file's name (`README.md`, `docker-compose.yml`). Paths that start with `./`, `../` or
// `/` are not looked at: relative imports are tsc's to check, `/app/…` is inside the container, and
// links of the docs are test/unit/doc-links.test.ts's (which leaves backtick paths to this test).
// This file itself is not read: it names stale paths on purpose, as examples.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const self = path.relative(root, import.meta.filename);

/** Named on purpose though not in the repository: `file → path`, and why. An unused entry fails. */
const ALLOWED: Record<string, string> = {
  'scripts/build.ts → api/main.js': 'the compiled entry point, joined onto dist/',
  'scripts/prisma-generate.ts → prisma/build/index.js': "the prisma package's CLI, resolved in node_modules/",
};

/**
 * TEMPORARY: stale paths in api/ files, which are being rewritten separately, as `file → path`.
 * Only api/ entries are accepted, and an entry that is no longer stale fails the test, so each
 * leaves with its fix. Empty when this test was written: api/ named no stale path then.
 */
const PENDING_API_FIXES: string[] = [];

/** Source and documentation files as git sees the working tree, tracked or not (ignored ones left out). */
function scannedFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: root,
    encoding: 'utf8',
  });
  return [...new Set(listed.split('\0'))].filter(
    (file) =>
      file !== '' &&
      file !== self &&
      /(?:\.(?:ts|mts|cts|js|mjs|cjs|md|sh|yml|yaml|prisma)|(?:^|\/)Dockerfile[\w.-]*)$/.test(file) &&
      !/^(?:node_modules|generated|bench\/results|prisma\/migrations)\//.test(file) &&
      !/^client\/.*\.generated\.ts$/.test(file) &&
      existsSync(path.join(root, file)),
  );
}

/** Top-level folders git knows a file in: not node_modules/, generated/ or other run-time output. */
function topLevelFolders(files: string[]): string[] {
  const known = new Set(files.map((file) => file.split('/')[0]!));
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && known.has(entry.name))
    .map((entry) => entry.name)
    .sort();
}

const extensions = 'ts|mts|cts|js|mjs|cjs|md|sh|json|prisma|ya?ml|sql|html|css|svg|png|txt';
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/**
 * Not inside a longer path, word or URL on the left; on the right no more of a name (a sentence's full stop may
 * follow).
 */
const before = String.raw`(?<![\w.\/@~$%\\-])`;
const after = String.raw`(?![\w\/-]|\.\w)`;

function pathPattern(folders: string[]): RegExp {
  const folder = folders.map(escape).join('|');
  return new RegExp(
    String.raw`${before}((?:${folder})\/(?:[\w.-]+\/)*(?:[\w.-]*\w\.(?:${extensions})|Dockerfile(?:[.-]\w[\w-]*)*|))${after}`,
    'g',
  );
}

/** A bare name of the same family as a root file: `README.md`, `docker-compose.override.yml`, `import-rules.ts`. */
function rootNamePattern(rootFiles: string[]): RegExp {
  const stems = [...new Set(rootFiles.map((file) => file.split('.')[0]!).filter((stem) => stem.length > 2))]
    .map(escape)
    .join('|');
  return new RegExp(
    String.raw`${before}((?:${stems})(?:\.[\w-]+)*\.(?:${extensions})|Dockerfile(?:[.-]\w[\w-]*)*)${after}`,
    'g',
  );
}

interface Named {
  file: string;
  line: number;
  target: string;
}

function namedPaths(file: string, text: string, folders: string[], rootFiles: string[]): Named[] {
  const found: Named[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  for (const match of text.matchAll(pathPattern(folders)))
    found.push({ file, line: lineOf(match.index), target: match[1]! });
  for (const match of text.matchAll(rootNamePattern(rootFiles)))
    found.push({ file, line: lineOf(match.index), target: match[1]! });
  return found;
}

/**
 * A file or a folder of the repository; a bare root name may also be the file's neighbour. A path
 * through a placeholder in capitals (`archive/LABEL/`) needs the folder before it.
 */
function exists(named: Named): boolean {
  const parts = named.target.split('/');
  const placeholder = parts.findIndex((part) => /^[A-Z][A-Z\d_]*$/.test(part));
  if (placeholder > 0) return existsSync(path.join(root, ...parts.slice(0, placeholder)));
  if (existsSync(path.join(root, named.target))) return true;
  return !named.target.includes('/') && existsSync(path.join(root, path.dirname(named.file), named.target));
}

/**
 * Folders a path may start with though the repository has none: where the build and the install
 * write, and folders inside the images compose runs. Any other path under a folder the repository
 * does not have is a file that should exist and does not (`design/architecture.md`), unless it is
 * relative to the file naming it (`contract/…` in docs/, `assets/…` beside a page's code).
 */
const OUTSIDE_FOLDERS: Record<string, string> = {
  dist: 'what npm run build writes',
  node_modules: 'what npm installs',
  generated: 'what npm run db:generate writes',
  'swagger-ui-dist': 'a package in node_modules/',
  config: "Temporal's image (compose mounts the dynamic config there)",
};

/** `folder/…/name.ext` where the folder is not one of the repository's top-level folders. */
function outsidePaths(file: string, text: string, folders: string[]): Named[] {
  const pattern = new RegExp(
    String.raw`${before}([a-z][\w-]*\/(?:[\w.-]+\/)*[\w.-]*\w\.(?:${extensions}))${after}`,
    'g',
  );
  return [...text.matchAll(pattern)]
    .filter((match) => !folders.includes(match[1]!.split('/')[0]!))
    .map((match) => ({ file, line: text.slice(0, match.index).split('\n').length, target: match[1]! }));
}

describe('paths named in comments, strings and docs', () => {
  const files = scannedFiles();
  const folders = topLevelFolders(files);
  const rootFiles = files.filter((file) => !file.includes('/'));

  it('finds the files and folders to read, and recognises a path as a reader would', () => {
    expect(files.length).toBeGreaterThan(300);
    expect(folders).toEqual(expect.arrayContaining(['docs', 'lib', 'scripts', 'test']));
    expect(folders).not.toContain('node_modules');
    expect(folders).not.toContain('generated');
    const sample = [
      '// see lib/config.ts, docs/architecture.md#admission-and-back-pressure and scripts/test.sh.',
      "import x from '../lib/config.ts'; // https://example.com/docs/a.md, /app/lib/b.ts, ../shared/c.md",
      '`cli/stack/` moved; `test/unit/*.test.ts`; README.md and docker-compose.prod.yml; config.ts alone; see Dockerfile.',
      "fundings/funding-record.ts's writes; lib/temporal, domain/money.tsx; deploy/Dockerfile",
    ].join('\n');
    expect(
      namedPaths(
        'x.ts',
        sample,
        ['cli', 'deploy', 'docs', 'domain', 'fundings', 'lib', 'scripts', 'test'],
        ['Dockerfile', 'README.md', 'docker-compose.yml'],
      ).map((named) => `${named.line}:${named.target}`),
    ).toEqual([
      '1:lib/config.ts',
      '1:docs/architecture.md',
      '1:scripts/test.sh',
      '3:cli/stack/',
      '3:test/unit/',
      '4:fundings/funding-record.ts',
      '4:deploy/Dockerfile',
      '3:README.md',
      '3:docker-compose.prod.yml',
      '3:Dockerfile',
    ]);
  });

  it('names only files and folders that exist', () => {
    const entry = (named: Named) => `${named.file} → ${named.target}`;
    const stale: Named[] = [];
    const seen = new Set<string>();
    for (const file of files) {
      for (const named of namedPaths(file, readFileSync(path.join(root, file), 'utf8'), folders, rootFiles)) {
        seen.add(entry(named));
        if (!(entry(named) in ALLOWED) && !exists(named)) stale.push(named);
      }
    }
    expect(seen.size).toBeGreaterThan(500);
    expect(Object.keys(ALLOWED).filter((allowed) => !seen.has(allowed))).toEqual([]);
    expect(
      stale
        .filter((named) => !PENDING_API_FIXES.includes(entry(named)))
        .map((named) => `${named.file}:${named.line} → ${named.target}`),
    ).toEqual([]);
    // Only api/ files wait; an entry whose path was fixed (or whose file went) leaves the list.
    expect(
      PENDING_API_FIXES.filter(
        (pending) => !pending.startsWith('api/') || !stale.some((named) => entry(named) === pending),
      ),
    ).toEqual([]);
  });

  it('names no file under a folder the repository does not have, unless relative to its own folder', () => {
    expect(
      outsidePaths('x.ts', '// see design/architecture.md, dist/cli/main.js and lib/config.ts', folders).map(
        (named) => named.target,
      ),
    ).toEqual(['design/architecture.md', 'dist/cli/main.js']);
    // Every folder of the root counts here (client/ and bench/ hold only files the scan leaves out).
    const rootFolders = readdirSync(root, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    const missing = files.flatMap((file) =>
      outsidePaths(file, readFileSync(path.join(root, file), 'utf8'), rootFolders).filter(
        (named) =>
          !(named.target.split('/')[0]! in OUTSIDE_FOLDERS) &&
          !existsSync(path.join(root, path.dirname(file), named.target)),
      ),
    );
    expect(missing.map((named) => `${named.file}:${named.line} → ${named.target}`)).toEqual([]);
  });
});
