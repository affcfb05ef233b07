// The names README.md and docs/ give the code exist in the code, so a renamed function, table,
// route or metric cannot leave a doc naming what is gone:
// - a function or another code name in backticks (`settleHold`, `passClaimed()`, `ledger.settleMany`,
//   `FundWalletInput`: a call, a member, or a name in camelCase or PascalCase) is declared or
//   called in the code, or is a string the code holds (an error type, an event type), or is the
//   Temporal SDK's;
// - a name tied to a file or a record (`` `ledger/limits.ts` `headroomOf` ``, "`settleHold` in
//   `fundings/funding-record.ts`", "funding record `finish`", `ledger.settleMany`) is in that file;
// - a table (`` the `funding` table ``, "`ops_action` row") is one of prisma/schema.prisma's;
// - a route of walletflow's (`GET /ops/fundings/{id}`, `POST /console/…`) is declared
//   (api/http/route-spec.ts `defineRoute`, listed by api/docs/openapi.ts and the console's router);
// - a metric (`walletflow_…`) is one the code registers.
// `walletflow` commands and flags are test/unit/docs-truth.test.ts's, paths test/unit/named-paths.test.ts's.
// docs/contract/ is the wallet operator's interface and the contract with it: its names are the
// operator's, not walletflow's code, and are not read here.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/docs/openapi.ts';
import { consoleRoutes } from '../../api/console/console-router.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);

const docs = tracked.filter(
  (file) =>
    file === 'README.md' || (file.startsWith('docs/') && file.endsWith('.md') && !file.startsWith('docs/contract/')),
);

/** Code without its comments: a name only a comment keeps is gone. */
function uncommented(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`\\])\/\/[^\n]*/g, '$1')
    .replace(/^\s*#[^\n]*/gm, '');
}

/** Every file a process, a test or a deployment reads: TypeScript and JavaScript, the schema, SQL, shell, YAML. */
const codeFiles = tracked.filter(
  (file) =>
    /\.(?:ts|mjs|js|prisma|sql|sh|ya?ml)$/.test(file) &&
    !file.startsWith('bench/results/') &&
    file !== path.relative(root, import.meta.filename),
);
const code = new Map(codeFiles.map((file) => [file, uncommented(read(file))]));
const allCode = [...code.values()].join('\n');

/** The Temporal SDK's own declarations (`deprecatePatch`, `historyFromJSON`): named in the docs as the SDK's. */
const sdk = ['workflow', 'common', 'worker', 'client', 'activity']
  .flatMap((name) => {
    const dir = path.join(root, 'node_modules/@temporalio', name, 'lib');
    return readdirSync(dir)
      .filter((file) => file.endsWith('.d.ts'))
      .map((file) => readFileSync(path.join(dir, file), 'utf8'));
  })
  .join('\n');

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Declared, called or assigned (`function name`, `name(`, `name:`, `name =`, `type Name`), or a string the code holds.
 */
function namesIn(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(
    /\b(?:function\*?|class|interface|type|enum|const|let|var|async|get|set|alert:)\s+([A-Za-z_$][\w$]*)/g,
  ))
    names.add(match[1]!);
  for (const match of text.matchAll(/(?<![\w$])([A-Za-z_$][\w$]*)\??\s*(?:[:=(<]|\)\s*=>)/g)) names.add(match[1]!);
  for (const match of text.matchAll(/['"`]([A-Za-z_$][\w$.]*)['"`]/g)) names.add(match[1]!);
  return names;
}

/**
 * The models' delegates of the Prisma client (`ledgerAccount` for `model LedgerAccount`), generated from the schema.
 */
const prismaDelegates = [...read('prisma/schema.prisma').matchAll(/^model (\w+)/gm)].map(
  (match) => match[1]!.charAt(0).toLowerCase() + match[1]!.slice(1),
);
const codeNames = new Set([...namesIn(allCode), ...prismaDelegates]);
const sdkNames = new Set([...sdk.matchAll(/[A-Za-z_$][\w$]*/g)].map((match) => match[0]));

/** Names that are not walletflow's code nor the SDK's, though they look like code: what each is. */
const NOT_CODE: Record<string, string> = {
  TemporalChangeVersion: "Temporal's own search attribute, which patched() writes",
  'matching.numTaskqueueReadPartitions': "a key of the Temporal server's dynamic config",
};

interface Named {
  file: string;
  line: number;
  name: string;
}

/** The inline code spans of a markdown text (fenced blocks left out), each with its line. */
function codeSpans(file: string, text: string): Named[] {
  const blanked = text.replace(/^\s*```[^\n]*\n[\s\S]*?^\s*```/gm, (block) => block.replace(/[^\n]/g, ' '));
  return [...blanked.matchAll(/`([^`\n]+)`/g)].map((match) => ({
    file,
    line: blanked.slice(0, match.index).split('\n').length,
    name: match[1]!,
  }));
}

/** A span that names code: `name()`, `object.member`, or a camelCase or PascalCase name. */
function codeName(span: string): { name: string; whole: string } | undefined {
  const match = /^(?:([A-Za-z_$][\w$]*)\.)?([A-Za-z_$][\w$]*)(\(\))?$/.exec(span);
  if (!match) return undefined;
  const name = match[2]!;
  const looksLikeCode =
    match[3] !== undefined ||
    match[1] !== undefined ||
    /^[a-z][a-z0-9]*[A-Z]/.test(name) ||
    /^[A-Z][a-z0-9]+[A-Z][a-z]/.test(name);
  return looksLikeCode ? { name, whole: match[1] ? `${match[1]}.${name}` : name } : undefined;
}

const ident = String.raw`([A-Za-z_$][\w$]*)(?:\(\))?`;
const sourceFile = String.raw`([\w./-]+\.(?:ts|js|mjs))`;
/** Phrases that tie a name to a file: which capture is the file and which the name. */
const tiedToFile: Array<{ pattern: RegExp; file: number; name: number }> = [
  { pattern: new RegExp(String.raw`\`${sourceFile}\`(?:'s)? \`${ident}\``, 'g'), file: 1, name: 2 },
  { pattern: new RegExp(String.raw`\`${sourceFile}\` \(\`${ident}\``, 'g'), file: 1, name: 2 },
  { pattern: new RegExp(String.raw`\`${ident}\` (?:in|of|from) \`${sourceFile}\``, 'g'), file: 2, name: 1 },
  { pattern: new RegExp(String.raw`\`${ident}\` \(\`${sourceFile}\``, 'g'), file: 2, name: 1 },
];
/** The modules docs name by what they are: "funding record `finish`", `ledger.settleMany`. */
const owners: Record<string, string> = {
  'funding record': 'fundings/funding-record.ts',
  'batch items record': 'fundings/batch-items-record.ts',
  'batch record': 'fundings/batch-record.ts',
  'payment record': 'payments/payment-record.ts',
  'webhook store': 'webhooks/webhook-store.ts',
  ledger: 'ledger/ledger.ts',
};

/** Names tied to a file, and where: each must be in that file. */
function namesInFiles(file: string, text: string): Array<Named & { in: string }> {
  const flat = text.replace(/\s*\n\s*/g, ' ');
  const found: Array<Named & { in: string }> = [];
  for (const { pattern, file: fileGroup, name: nameGroup } of tiedToFile) {
    for (const match of flat.matchAll(pattern))
      found.push({ file, line: 0, name: match[nameGroup]!, in: match[fileGroup]! });
  }
  for (const match of flat.matchAll(
    /\b(funding record|batch items record|batch record|payment record|webhook store)(?:'s)?((?:,? (?:and |or |then )?`[A-Za-z_$][\w$]*(?:\(\))?`)+)/g,
  )) {
    for (const name of match[2]!.matchAll(/`([A-Za-z_$][\w$]*)/g))
      found.push({ file, line: 0, name: name[1]!, in: owners[match[1]!]! });
  }
  for (const match of flat.matchAll(/`ledger\.([A-Za-z_$][\w$]*)/g))
    found.push({ file, line: 0, name: match[1]!, in: owners.ledger! });
  return found;
}

/** Tables: prisma/schema.prisma's (`@@map`), and Prisma's own bookkeeping. */
const tables = new Set(
  [...read('prisma/schema.prisma').matchAll(/@@map\("([a-z_]+)"\)/g)]
    .map((match) => match[1]!)
    .concat('_prisma_migrations'),
);

/** A table named as one: "the `x` table", "`x` and `y` tables", "table `x`", "a `x` row". */
function namedTables(file: string, text: string): Named[] {
  const flat = text.replace(/\s*\n\s*/g, ' ');
  const found: Named[] = [];
  for (const match of flat.matchAll(/((?:`[a-z_]+`(?:, | and | or )?)+) (?:tables?|rows?)\b/g)) {
    for (const name of match[1]!.matchAll(/`([a-z_]+)`/g)) found.push({ file, line: 0, name: name[1]! });
  }
  for (const match of flat.matchAll(/\btables? `([a-z_]+)`/g)) found.push({ file, line: 0, name: match[1]! });
  return found;
}

/** Words a table-like phrase uses for something else: what each is. */
const NOT_TABLES: Record<string, string> = {
  transfer: "a row of `walletflow fundings get`'s output (docs/runbook.md)",
};

/** walletflow's routes as declared: `METHOD /path`, each parameter as `{}`. */
const declaredRoutes = new Set(
  [...allRoutes, ...consoleRoutes].map(
    (route) => `${route.method.toUpperCase()} ${route.path.replace(/\{[^}]+\}/g, '{}')}`,
  ),
);
/** The first segments of walletflow's routes: a route under another belongs to the wallet service or the sandbox. */
const ownPrefixes = new Set([...allRoutes, ...consoleRoutes].map((route) => route.path.split('/')[1]!));

/** `METHOD /path` in a doc, its query string and trailing punctuation dropped. */
function namedRoutes(file: string, text: string): Named[] {
  return text.split('\n').flatMap((line, index) =>
    [...line.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) (\/[^\s`)|,;"*]*)/g)]
      .map((match) => ({
        file,
        line: index + 1,
        name: `${match[1]} ${match[2]!.replace(/\?.*$/, '').replace(/[.:]+$/, '')}`,
      }))
      .filter((named) => ownPrefixes.has(named.name.split(' ')[1]!.split('/')[1]!)),
  );
}

/** A route a doc names matches a declared one: a `{…}` or a value where the declaration has a parameter. */
function declared(route: string): boolean {
  const [method, pathName] = route.split(' ') as [string, string];
  const segments = pathName.split('/');
  return [...declaredRoutes].some((candidate) => {
    const [candidateMethod, candidatePath] = candidate.split(' ') as [string, string];
    const parts = candidatePath.split('/');
    return (
      candidateMethod === method &&
      parts.length === segments.length &&
      parts.every(
        (part, index) =>
          part === segments[index] ||
          (part === '{}' && segments[index] !== '' && !segments[index]!.includes('/')) ||
          (part === '{}' && /^\{.*\}$/.test(segments[index]!)),
      )
    );
  });
}

/** Routes named on purpose though not declared: `file → route`, and why. */
const NOT_ROUTES: Record<string, string> = {
  'docs/security.md → POST /ops/Fundings': 'a spelling the router refuses (404), named as such',
  'docs/promises.md → POST /ops/FUNDINGS': 'a spelling the router refuses (404), named as such',
  'docs/console.md → POST /console/accounts': "the start of a path, as the audit's filter takes one",
  'docs/promises.md → GET /console/': 'a spelling the router refuses (404), named as such',
};

describe('names the docs give the code', () => {
  it('reads code names, tied names, tables and routes as a reader would', () => {
    expect(
      codeSpans('x.md', 'a `settleHold()` b\n```\n`not()`\n```\n`ledger.settleMany` and `foo_bar`').map(
        (named) => `${named.line}:${named.name}`,
      ),
    ).toEqual(['1:settleHold()', '5:ledger.settleMany', '5:foo_bar']);
    expect(
      [
        'settleHold()',
        'ledger.settleMany',
        'FundWalletInput',
        'claimPending',
        'claim',
        'TREASURY',
        'foo_bar',
        'a b',
      ].map((span) => codeName(span)?.whole),
    ).toEqual([
      'settleHold',
      'ledger.settleMany',
      'FundWalletInput',
      'claimPending',
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(
      namesInFiles(
        'x.md',
        "`ledger/limits.ts` `headroomOf`; `passClaimed` in\n`activities/funding.ts`; the funding record's `finish`, `cancel` and `resolve`; `ledger.settleMany`",
      ).map((named) => `${named.in} ${named.name}`),
    ).toEqual([
      'ledger/limits.ts headroomOf',
      'activities/funding.ts passClaimed',
      'fundings/funding-record.ts finish',
      'fundings/funding-record.ts cancel',
      'fundings/funding-record.ts resolve',
      'ledger/ledger.ts settleMany',
    ]);
    expect(
      namedTables('x.md', 'the `funding` and `funding_event` tables; a `wallet_call` row; table `link`').map(
        (named) => named.name,
      ),
    ).toEqual(['funding', 'funding_event', 'wallet_call', 'link']);
    expect(
      namedRoutes('x.md', '`GET /ops/fundings?status=…`, POST /ops/fundings/{id}/resolve. GET /transfers/{id}').map(
        (named) => named.name,
      ),
    ).toEqual(['GET /ops/fundings', 'POST /ops/fundings/{id}/resolve']);
    expect(
      [
        'GET /ops/fundings/{id}',
        'GET /ops/accounts/TREASURY',
        'POST /ops/fundings/{id}/resolves',
        'DELETE /ops/fundings',
      ].map(declared),
    ).toEqual([true, true, false, false]);
    // A renamed function is gone from the code; so is a route or a table nobody declares.
    expect([
      ...namesIn(
        "async function settleHold(a) {}\nconst x = { claimPending: () => 1 };\n// staleName()\nthrow new Error('FundingOwnerLost');",
      ),
    ]).toEqual(expect.arrayContaining(['settleHold', 'claimPending', 'FundingOwnerLost']));
    expect(codeNames.has('settleHold')).toBe(true);
    expect(codeNames.has('settleHolds')).toBe(false);
    expect(codeNames.has('ledgerEntry')).toBe(true);
  });

  it('name only functions and other code names that exist', () => {
    const missing = docs.flatMap((file) =>
      codeSpans(file, read(file)).flatMap((span) => {
        const named = codeName(span.name);
        if (!named || named.whole in NOT_CODE || named.name in NOT_CODE) return [];
        if (codeNames.has(named.name) || codeNames.has(named.whole) || sdkNames.has(named.name)) return [];
        return [`${span.file}:${span.line} ${span.name}`];
      }),
    );
    expect(missing).toEqual([]);
    const named = docs.flatMap((file) =>
      codeSpans(file, read(file)).flatMap((span) => codeName(span.name)?.whole ?? []),
    );
    expect(Object.keys(NOT_CODE).filter((name) => !named.includes(name))).toEqual([]);
  });

  it('name a function of a file, a record or the ledger only where it is', () => {
    const wrong = docs.flatMap((file) =>
      namesInFiles(file, read(file)).flatMap((named) => {
        const text = code.get(named.in);
        if (text === undefined) return [`${file}: ${named.in} (no such file) for ${named.name}`];
        return new RegExp(`(?<![\\w$])${escape(named.name)}(?![\\w$])`).test(text)
          ? []
          : [`${file}: ${named.name} is not in ${named.in}`];
      }),
    );
    expect(wrong).toEqual([]);
  });

  it('name only tables prisma/schema.prisma has', () => {
    const wrong = docs.flatMap((file) =>
      namedTables(file, read(file))
        .filter((named) => !tables.has(named.name) && !(named.name in NOT_TABLES))
        .map((named) => `${file}: ${named.name}`),
    );
    expect(wrong).toEqual([]);
    const named = new Set(docs.flatMap((file) => namedTables(file, read(file)).map((each) => each.name)));
    expect(Object.keys(NOT_TABLES).filter((name) => !named.has(name))).toEqual([]);
    expect(named.size).toBeGreaterThan(5);
  });

  it("name only walletflow's declared routes", () => {
    expect(declaredRoutes.size).toBeGreaterThan(50);
    const found = docs.flatMap((file) => namedRoutes(file, read(file)));
    const wrong = found
      .filter((named) => !declared(named.name) && !(`${named.file} → ${named.name}` in NOT_ROUTES))
      .map((named) => `${named.file}:${named.line} ${named.name}`);
    expect(wrong).toEqual([]);
    expect(
      Object.keys(NOT_ROUTES).filter((entry) => !found.some((named) => `${named.file} → ${named.name}` === entry)),
    ).toEqual([]);
  });

  it('name only metrics the code registers', () => {
    const metrics = new Set([...allCode.matchAll(/['"`](walletflow_[a-z_]+)['"`]/g)].map((match) => match[1]!));
    expect(metrics.size).toBeGreaterThan(10);
    const named = docs.flatMap((file) =>
      codeSpans(file, read(file)).flatMap((span) =>
        [...span.name.matchAll(/\b(walletflow_[a-z_]+)\b/g)].map((match) => ({ ...span, name: match[1]! })),
      ),
    );
    // A histogram's series carry suffixes of their own.
    const known = (name: string) => metrics.has(name) || metrics.has(name.replace(/_(?:bucket|sum|count)$/, ''));
    expect(named.filter((each) => !known(each.name)).map((each) => `${each.file}:${each.line} ${each.name}`)).toEqual(
      [],
    );
  });
});
