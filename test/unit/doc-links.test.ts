// The documentation works in a plain clone: every relative link and image in README.md and
// docs/**/*.md points at a file of this repository, nothing points outside it (such as the
// ../shared folder some machines have beside the clone), and every #anchor into a markdown file
// names one of its headings (GitHub's slugs). Repository paths written as text
// (`links/token-vault.ts`), in the docs and in code alike, are checked by
// test/unit/named-paths.test.ts.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

const files = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];

/** The text with fenced code blocks blanked out (line numbers kept): commands there are not links. */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

interface Target {
  file: string;
  line: number;
  target: string;
}

/** Markdown links and images, reference definitions, and HTML src/href attributes. */
function linkTargets(file: string, text: string): Target[] {
  const body = withoutFences(text).replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
  const patterns = [
    /!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g,
    /^\s*\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)/gm,
    /<(?:img|a|source)\b[^>]*?\s(?:src|href)=["']([^"']+)["']/gi,
  ];
  return patterns.flatMap((pattern) =>
    [...body.matchAll(pattern)].map((match) => ({ file, line: lineOf(body, match.index), target: match[1]! })),
  );
}

/** GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const plain = match[1]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

const relative = (target: Target) => `${path.relative(root, target.file)}:${target.line} → ${target.target}`;

describe('documentation links', () => {
  it('finds the README and the docs', () => {
    expect(files.length).toBeGreaterThan(5);
    expect(
      linkTargets('x.md', '[a](b.md) ![c](d.png) <img src="e.png"> `[f](g.md)`\n```\n[h](i.md)\n```\n[j]: k.md').map(
        (t) => t.target,
      ),
    ).toEqual(['b.md', 'd.png', 'k.md', 'e.png']);
    expect([...headingAnchors('# A title\n## 8. walletflow’s own `HTTP` surface (fixed)\n## A title')]).toEqual([
      'a-title',
      '8-walletflows-own-http-surface-fixed',
      'a-title-1',
    ]);
  });

  it('resolves every relative link and image to a file or folder inside the repository, and each #anchor to a heading', () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const link of linkTargets(file, readFileSync(file, 'utf8'))) {
        if (isExternal(link.target)) continue;
        const [pathPart = '', anchor] = link.target.split('#', 2);
        const target = decodeURIComponent(pathPart.replace(/\?.*$/, ''));
        const resolved =
          target === ''
            ? file
            : target.startsWith('/')
              ? path.join(root, target)
              : path.resolve(path.dirname(file), target);
        if (path.relative(root, resolved).startsWith('..')) broken.push(`${relative(link)} (outside the repository)`);
        else if (!existsSync(resolved)) broken.push(`${relative(link)} (missing)`);
        else if (
          anchor &&
          resolved.endsWith('.md') &&
          !headingAnchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor))
        ) {
          broken.push(`${relative(link)} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("keeps the README to a newcomer's five minutes: at most 150 lines, the two commands first, two pictures", () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(151);
    const firstBlock = readme.slice(readme.indexOf('```sh'), readme.indexOf('```', readme.indexOf('```sh') + 5));
    expect(firstBlock).toContain('bash scripts/dev.sh');
    expect(firstBlock).toContain('bash scripts/test.sh');
    expect(readme.match(/docs\/images\/[\w-]+\.png/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
  });

  it('never refers to the ../shared folder outside the repository', () => {
    const outside = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (/\.\.\/shared\b/.test(line) ? [`${path.relative(root, file)}:${index + 1}`] : [])),
    );
    expect(outside).toEqual([]);
  });
});
