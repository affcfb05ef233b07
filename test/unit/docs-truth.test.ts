// The documentation says what the code does, where a test can hold it: the configuration names the
// docs, .env.example and docker-compose.yml mention exist in the configuration schema, and every
// name of the schema is in docs/configuration.md with its default; every `walletflow <command>`
// (and its flags) the docs show exists in the CLI; every list of ops key scopes is the whole list of
// the scope type; docs/fundings.md's moves are the funding's transition table; docs/operations.md
// names every repair the sweep counts, every workflow the worker runs, every value of the reports' `report`
// label and every table the purge empties. And facts the docs state that the code can tell, read from
// the code: who writes a single funding's moves and where its hold settles, which status guard is
// written by hand, every code a FAILED funding carries, the ids a {paymentId} takes, the batch
// runner's chunks and events a run, what a worker's Schedules keep, the PostgreSQL connections an API
// and a worker process open, what the scripts' headers say they install, and the histories from
// before fencing. Paths named in comments and docs are test/unit/named-paths.test.ts's; links are
// test/unit/doc-links.test.ts's; functions, tables, routes and metrics test/unit/doc-names.test.ts's;
// the bench's figures test/unit/bench-figures.test.ts's.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { environmentSchema, secretVariables } from '../../lib/config.ts';
import { opsScopes } from '../../lib/ops-keys.ts';
import { purgeTables, type PurgeTable } from '../../domain/purge.ts';
import { DEFAULT_POOL_SIZE, refreshPoolSize } from '../../lib/database.ts';
import { fundingErrorMessages, fundingTransitions, fundingStatuses } from '../../domain/funding.ts';
import { paymentTransitions } from '../../domain/payment.ts';
import { sourcesOf, type TransitionTable } from '../../domain/transitions.ts';
import { registerOpsCommands } from '../../cli/ops-commands.ts';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';
import { payWalletWorkflowType } from '../../workflows/pay-wallet.contract.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

function markdownFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(file);
    return entry.name.endsWith('.md') ? [file] : [];
  });
}

const docs = ['README.md', ...markdownFiles('docs')];
const configurationFiles = [...docs, '.env.example', 'docker-compose.yml'];
const schemaNames = Object.keys(environmentSchema.shape);

/** Every .ts, .mjs and .sh file of the repository that a process runs (not node_modules, generated code or tests). */
function sourceFiles(dir = ''): string[] {
  return readdirSync(path.join(root, dir || '.'), { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || ['node_modules', 'generated', 'dist', 'test'].includes(entry.name)) return [];
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return /\.(?:ts|mjs|sh)$/.test(entry.name) ? [file] : [];
  });
}

const sources = sourceFiles().map((file) => ({ file, text: read(file) }));

/**
 * Names a process of this repository reads from its environment outside the schema (the CLI's, the stacks', the
 * scripts').
 */
/** The suite's own set-up (test/*.ts, test/support/): a process that reads its environment too (not the test files). */
const suiteSetup = [
  ...readdirSync(path.join(root, 'test'))
    .filter((name) => /^[\w-]+\.ts$/.test(name))
    .map((name) => `test/${name}`),
  ...readdirSync(path.join(root, 'test/support'))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `test/support/${name}`),
].map((file) => ({ file, text: read(file) }));

const readByCode = new Set(
  [...sources, ...suiteSetup].flatMap(({ text }) =>
    [...text.matchAll(/(?:process\.env|\benv)(?:\.|\[['"])([A-Z][A-Z0-9_]+)|\$\{?([A-Z][A-Z0-9_]+)/g)].map(
      (match) => match[1] ?? match[2]!,
    ),
  ),
);

/** Upper-case words the code uses as values (error codes, states, kinds): not configuration. */
const codeValues = new Set(
  sources.flatMap(({ text }) =>
    [...text.matchAll(/['"`]([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)['"`]/g)].map((match) => match[1]!),
  ),
);

/** Named in the docs, read by another program: who reads it. */
const OTHER_PROGRAMS: Record<string, string> = {
  POSTGRES_PASSWORD: 'docker compose and the postgres image (compose builds DATABASE_URL from it)',
  POSTGRES_USER: "the postgres image in docker-compose.yml, and Temporal's auto-setup image",
  POSTGRES_DB: 'the postgres image in docker-compose.yml',
  POSTGRES_PWD: "Temporal's auto-setup image in docker-compose.yml",
  POSTGRES_SEEDS: "Temporal's auto-setup image in docker-compose.yml",
  OTEL_BSP_SCHEDULE_DELAY: "the OpenTelemetry SDK's batch span processor",
  OTEL_BSP_MAX_QUEUE_SIZE: "the OpenTelemetry SDK's batch span processor",
  OTEL_TRACES_SAMPLER: "the OpenTelemetry SDK's sampler",
  OTEL_TRACES_SAMPLER_ARG: "the OpenTelemetry SDK's sampler",
  MALLOC_ARENA_MAX: "glibc's allocator",
  NODE_COMPILE_CACHE: 'Node.js itself, its on-disk compile cache (docs/testing.md: measured, not set)',
  WORKER_VERSION: 'docker compose: the image tag of the worker service (a deploy moves it)',
  WORKER_NEXT_VERSION: "docker compose: the image tag of a deploy's worker-next service",
  WALLETFLOW_VERSION: 'docker compose: the image tag of migrate, api and codec-server (a deploy moves it)',
};

/** A word that names configuration: the families of the schema's names, and the CLI's and the stacks' own. */
const families = new Set([
  ...schemaNames.map((name) => name.split('_')[0]!),
  'WALLETFLOW',
  'SANDBOX',
  'POSTGRES',
  'MALLOC',
]);

function configurationNames(text: string): string[] {
  return [...text.matchAll(/(?<![\w$-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w-])/g)]
    .map((match) => match[1]!)
    .filter((name) => families.has(name.split('_')[0]!) && (!codeValues.has(name) || schemaNames.includes(name)));
}

const secretFiles = new Set(secretVariables.map((name) => `${name}_FILE`));
const known = (name: string) =>
  schemaNames.includes(name) || secretFiles.has(name) || readByCode.has(name) || name in OTHER_PROGRAMS;

describe('configuration names', () => {
  it('finds the names in the docs, and the code reading the others', () => {
    expect(
      configurationNames(
        'set `TREASURY_LIMIT` and WORKER_MAX_CONCURRENT_ACTIVITIES=16, not `INSUFFICIENT_FUNDS` or `NEEDS_REVIEW`',
      ),
    ).toEqual(['TREASURY_LIMIT', 'WORKER_MAX_CONCURRENT_ACTIVITIES']);
    expect(readByCode.has('WALLETFLOW_OPS_KEY_FILE')).toBe(true);
    expect(known('WORKER_MAX_ACTIVITIES')).toBe(false);
  });

  it('names only variables the schema has (or a `_FILE` of a secret, or one a process here or another program reads)', () => {
    const unknown = configurationFiles.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, index) =>
          configurationNames(line)
            .filter((name) => !known(name))
            .map((name) => `${file}:${index + 1} ${name}`),
        ),
    );
    expect(unknown).toEqual([]);
    const otherNamed = configurationFiles.flatMap((file) => configurationNames(read(file)));
    expect(Object.keys(OTHER_PROGRAMS).filter((name) => !otherNamed.includes(name))).toEqual([]);
  });

  it('lists every variable of the schema in docs/configuration.md, with its default as the schema has it', () => {
    const rows = [...read('docs/configuration.md').matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)].map(
      (match) => ({ name: match[1]!, fallback: match[2]!.trim() }),
    );
    expect(rows.map((row) => row.name).sort()).toEqual([...schemaNames].sort());
    const shape = environmentSchema.shape as Record<
      string,
      { safeParse(value: unknown): { success: boolean; data?: unknown } }
    >;
    const wrong: string[] = [];
    for (const { name, fallback } of rows) {
      const absent = shape[name]!.safeParse(undefined);
      const value = /^`(.*)`$/.exec(fallback)?.[1];
      if (value === undefined) {
        // No default: absent is undefined (or an empty list), or a value the schema derives.
        if (
          absent.success &&
          absent.data !== undefined &&
          !(Array.isArray(absent.data) && absent.data.length === 0) &&
          !(absent.data instanceof Map && absent.data.size === 0) &&
          absent.data !== false &&
          !fallback.startsWith('derived')
        ) {
          wrong.push(`${name}: the schema's default is ${String(absent.data)}, the table says ${fallback}`);
        }
        continue;
      }
      const given = shape[name]!.safeParse(value);
      if (
        !absent.success ||
        !given.success ||
        JSON.stringify(given.data, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) !==
          JSON.stringify(absent.data, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))
      ) {
        wrong.push(`${name}: the table's default ${value} is not the schema's (${String(absent.data)})`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

/** The CLI's commands: `command` and `command sub`, each with its flags. */
function cliCommands(): Map<string, Set<string>> {
  const commands = new Map<string, Set<string>>();
  const program = new Command();
  registerOpsCommands(program);
  const walk = (command: Command, prefix: string) => {
    for (const sub of command.commands) {
      const name = `${prefix}${sub.name()}`;
      commands.set(
        name,
        new Set([
          '--help',
          ...sub.options.flatMap((option) =>
            [option.long, option.negate ? `--${option.attributeName()}` : undefined].filter(
              (flag): flag is string => flag !== undefined,
            ),
          ),
        ]),
      );
      walk(sub, `${name} `);
    }
  };
  walk(program, '');
  // cli/main.ts runs on import: its own commands are read from its text, each with the flags up to the next command.
  const main = read('cli/main.ts');
  const starts = [...main.matchAll(/\b(program|deploy)\s*\.command\(\s*'([a-z-]+)/g)];
  for (const [index, start] of starts.entries()) {
    const block = main.slice(start.index, starts[index + 1]?.index ?? main.length);
    const name = start[1] === 'deploy' ? `deploy ${start[2]}` : start[2]!;
    commands.set(
      name,
      new Set([
        '--help',
        ...[...block.matchAll(/(?:option|Option)\(\s*'(?:-\w, )?(--[a-z-]+)/g)].map((match) =>
          match[1]!.replace(/^--no-/, '--'),
        ),
      ]),
    );
    for (const match of block.matchAll(/option\(\s*'--no-([a-z-]+)/g)) commands.get(name)!.add(`--no-${match[1]}`);
  }
  return commands;
}

/** The code of a markdown file or a comment: inline code spans (and fenced blocks), where commands are written. */
function codeOf(file: string, text: string): string[] {
  // In code, only comments: a template literal that starts with the word is a message, not a command.
  const comments = file.endsWith('.ts')
    ? text
        .split('\n')
        .filter((line) => /^\s*(?:\/\/|\*|\/\*)/.test(line))
        .join('\n')
    : text;
  if (!file.endsWith('.md')) return [...comments.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
  const fenced = [...text.matchAll(/^\s*```[^\n]*\n([\s\S]*?)^\s*```/gm)].map((match) => match[1]!);
  const inline = [...text.replace(/^\s*```[^\n]*\n[\s\S]*?^\s*```/gm, '').matchAll(/`([^`\n]+)`/g)].map(
    (match) => match[1]!,
  );
  return [...fenced, ...inline];
}

interface Mention {
  file: string;
  words: string[][];
  flags: string[];
}

/**
 * `walletflow fundings list|get --status …`: each word with its alternatives, and the flags up to the line's end or a
 * pipe.
 */
function mentions(file: string, text: string): Mention[] {
  return codeOf(file, text).flatMap((code) =>
    [...code.matchAll(/(?<![\w./-])walletflow((?: [a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)*)+)([^\n|;#`]*)/g)].map(
      (match) => ({
        file,
        words: match[1]!
          .trim()
          .split(' ')
          .map((word) => word.split('|')),
        flags: [...match[2]!.matchAll(/(?:^|\s)(--[a-z][a-z-]*)/g)].map((flag) => flag[1]!),
      }),
    ),
  );
}

describe('walletflow commands in the docs', () => {
  const commands = cliCommands();

  it('reads the CLI: its ops commands and its own', () => {
    expect([...commands.keys()]).toEqual(
      expect.arrayContaining([
        'dev',
        'bench',
        'deploy rollback',
        'fundings resolve',
        'batches pause',
        'webhooks endpoints create',
        'settlement-report',
      ]),
    );
    expect(commands.get('bench')).toContain('--batch-store');
    expect(commands.get('soak')).toContain('--no-chaos');
    expect(
      mentions('x.md', 'run `walletflow fundings list|get --status X` and `npx walletflow soak` or walletflow runs'),
    ).toEqual([
      { file: 'x.md', words: [['fundings'], ['list', 'get']], flags: ['--status'] },
      { file: 'x.md', words: [['soak']], flags: [] },
    ]);
  });

  it('names only commands and flags the CLI has', () => {
    const files = [
      ...docs,
      '.env.example',
      ...sources
        .filter(({ file }) => file.startsWith('cli/') || file.startsWith('api/') || file.startsWith('lib/'))
        .map(({ file }) => file),
    ];
    const wrong: string[] = [];
    for (const file of files) {
      for (const mention of mentions(file, read(file))) {
        for (const first of mention.words[0]!) {
          if (!commands.has(first)) {
            wrong.push(`${file}: walletflow ${first} (no such command)`);
            continue;
          }
          const subs = [...commands.keys()].filter(
            (name) => name.startsWith(`${first} `) && name.split(' ').length === 2,
          );
          const seconds = subs.length > 0 && mention.words[1] ? mention.words[1] : [];
          for (const second of seconds) {
            if (!commands.has(`${first} ${second}`))
              wrong.push(`${file}: walletflow ${first} ${second} (no such command)`);
          }
          const flagsOf = (name: string) => commands.get(name) ?? new Set<string>();
          const allowed = new Set([
            ...flagsOf(first),
            ...seconds.flatMap((second) => [...flagsOf(`${first} ${second}`)]),
            ...[...commands.keys()]
              .filter((name) => seconds.some((second) => name.startsWith(`${first} ${second} `)))
              .flatMap((name) => [...flagsOf(name)]),
          ]);
          for (const flag of mention.flags)
            if (!allowed.has(flag))
              wrong.push(
                `${file}: walletflow ${mention.words.map((word) => word.join('|')).join(' ')} ${flag} (no such flag)`,
              );
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('scopes', () => {
  /** A paragraph (of a doc, or of comment lines) that names at least four scopes lists them: all of them. */
  function partialLists(file: string, text: string): string[] {
    const paragraphs = text.split(/\n\s*(?:#\s*)?\n/);
    return paragraphs.flatMap((paragraph) => {
      const named = new Set(
        [...paragraph.matchAll(/(?<![\w-])`?(read|fund|pay|resolve|accounts|admin|approve)`?(?![\w-])/g)]
          .filter((match) => match[0].startsWith('`') || file === '.env.example')
          .map((match) => match[1]!),
      );
      if (!/scope/i.test(paragraph) || named.size < 4 || named.size === opsScopes.length) return [];
      return [
        `${file}: ${[...named].join(', ')} (missing ${opsScopes.filter((scope) => !named.has(scope)).join(', ')}) in "${paragraph.trim().slice(0, 80)}…"`,
      ];
    });
  }

  it('lists every scope of the scope type wherever scopes are listed', () => {
    expect(partialLists('x.md', 'scopes: `read`, `fund`, `pay`, `resolve`')).toHaveLength(1);
    expect(partialLists('x.md', `scopes: ${opsScopes.map((scope) => `\`${scope}\``).join(', ')}`)).toEqual([]);
    expect([...configurationFiles, 'README.md'].flatMap((file) => partialLists(file, read(file)))).toEqual([]);
  });
});

describe('docs/fundings.md', () => {
  it("draws the funding's moves as domain/funding.ts's transition table has them", () => {
    const text = read('docs/fundings.md');
    const block = /```\n(PENDING →[\s\S]*?)```/.exec(text)?.[1] ?? '';
    const drawn = new Map<string, string[]>();
    for (const line of block.trim().split('\n')) {
      const moves = /^([A-Z_]+) → (.+)$/.exec(line);
      if (moves) drawn.set(moves[1]!, moves[2]!.split(' | '));
      const finals = /^([A-Z_, ]+): final/.exec(line);
      if (finals) for (const status of finals[1]!.split(', ')) drawn.set(status, []);
    }
    expect(Object.fromEntries(fundingStatuses.map((status) => [status, drawn.get(status)]))).toEqual(
      Object.fromEntries(fundingStatuses.map((status) => [status, [...fundingTransitions[status]]])),
    );
  });
});

describe('docs/operations.md', () => {
  it('names every repair action the sweep counts (walletflow_reconcile_repairs_total)', () => {
    const contract = read('workflows/sweep.contract.ts');
    // The sweep and its report's tally, which counts the repairs it records.
    const sweep = `${read('activities/sweep.ts')}\n${read('activities/sweep-tally.ts')}`;
    const counted = new Set([
      ...[...(/export type RepairAction =([\s\S]*?);/.exec(contract)?.[1] ?? '').matchAll(/'([a-z-]+)'/g)].map(
        (match) => match[1]!,
      ),
      ...[...sweep.matchAll(/sweepRepair\(\s*'([a-z-]+)'/g)].map((match) => match[1]!),
      ...[...sweep.matchAll(/'(hold-[a-z]+)'/g)].map((match) => match[1]!),
    ]);
    expect(counted.size).toBeGreaterThanOrEqual(10);
    const operations = read('docs/operations.md');
    expect([...counted].filter((action) => !operations.includes(`\`${action}\``))).toEqual([]);
  });

  it("names every workflow the worker runs in the worker's row (workflows/index.ts)", () => {
    const exported = [...read('workflows/index.ts').matchAll(/^export \{ (\w+) \} from/gm)].map((match) => match[1]!);
    expect(exported.length).toBeGreaterThanOrEqual(9);
    const row = /^\| worker \(`worker\/main\.ts`\) \|.*$/m.exec(read('docs/operations.md'))?.[0] ?? '';
    expect(exported.filter((name) => !row.includes(`\`${name}\``))).toEqual([]);
  });

  it('gives every value of the streamed reports’ `report` label', () => {
    const values = sourceFiles().flatMap((file) =>
      [...read(file).matchAll(/\{ report: '([a-z-]+)', header:/g)].map((match) => match[1]!),
    );
    expect(values.length).toBeGreaterThanOrEqual(2);
    const row = /^\| `walletflow_report_rows_total` \|.*$/m.exec(read('docs/operations.md'))?.[0] ?? '';
    const said = [...(/`report` \(([^)]*)\)/.exec(row)?.[1]?.matchAll(/`([a-z-]+)`/g) ?? [])].map((match) => match[1]);
    expect(said.sort()).toEqual([...new Set(values)].sort());
  });

  it('says what the purge deletes: every table it empties, in words', () => {
    // Each table the purge empties (domain/purge.ts), as the Purge paragraph words it.
    const words: Record<PurgeTable, RegExp> = {
      login_state: /login states/,
      login_grant: /login\s+grants/,
      app_session: /web sessions/,
      embedded_session: /embedded sessions/,
      console_sign_in: /console sign-ins never finished/,
      console_session: /ended console\s+sessions/,
      attempt_count: /attempt counts/,
      ops_action_budget: /audit's budget counts/,
    };
    const paragraph = /^- Purge: [\s\S]*?(?=\n-|\n\n)/m.exec(read('docs/operations.md'))?.[0] ?? '';
    expect(purgeTables.filter((table) => !words[table].test(paragraph))).toEqual([]);
  });
});

/** The text of a markdown section, from its heading to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`no section ${heading}`);
  const level = /^#+/.exec(heading)![0].length;
  const rest = text.slice(start + heading.length);
  const end = rest.search(new RegExp(`^#{1,${level}} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** A function's (or an object member's) text: from its declaration to its closing brace. */
function functionText(text: string, name: string): string {
  const start = new RegExp(
    `(?:function\\s+${name}\\b|^\\s*(?:async\\s+)?${name}(?:\\s*:\\s*(?:async\\s*)?\\(|\\s*\\())`,
    'm',
  ).exec(text);
  if (!start) throw new Error(`no function ${name}`);
  // The body's brace: after the parameters' closing parenthesis, outside any type's angle brackets.
  let parens = 0;
  let index = text.indexOf('(', start.index);
  for (; index < text.length; index += 1) {
    if (text[index] === '(') parens += 1;
    if (text[index] === ')' && --parens === 0) break;
  }
  let angles = 0;
  for (; index < text.length && !(text[index] === '{' && angles === 0); index += 1) {
    if (text[index] === '<') angles += 1;
    if (text[index] === '>' && text[index - 1] !== '=') angles -= 1;
  }
  let depth = 0;
  for (; index < text.length; index += 1) {
    if (text[index] === '{') depth += 1;
    if (text[index] === '}' && --depth === 0) return text.slice(start.index, index + 1);
  }
  throw new Error(`unbalanced ${name}`);
}

/** The record member or function a position of a file is in: the nearest declaration above it. */
function enclosingMember(text: string, index: number): string {
  const before = text.slice(0, index).split('\n').reverse();
  for (const line of before) {
    const match = /^ {2,4}(?:async\s+)?(?:function\s+)?([a-zA-Z]\w*)(?:\s*:\s*(?:async\s*)?\(|\s*\()/.exec(line);
    if (match && !['if', 'for', 'while', 'switch', 'return', 'await', 'catch'].includes(match[1]!)) return match[1]!;
  }
  throw new Error('no enclosing member');
}

/** The leading comment of a file: its header. */
const header = (file: string) => /^(?:\/\/[^\n]*\n)+/.exec(read(file))?.[0] ?? '';
/** The paragraphs of a text (blank-line separated), joined into lines. */
const paragraphs = (text: string) => text.split(/\n\s*\n/).map((paragraph) => paragraph.replace(/\s*\n\s*/g, ' '));

describe('who writes a funding', () => {
  const activities = read('activities/funding-pass.ts');
  /**
   * The claimed fundings record's writes the one pass makes: a single funding's pass makes them too (a list of one).
   */
  const passWrites = [
    ...new Set(
      [...functionText(activities, 'passClaimed').matchAll(/claimedFundings\.(\w+)\(/g)].map((match) => match[1]!),
    ),
  ];

  it("reads the one pass's writes from the code, and that a single funding's pass is that pass", () => {
    expect(passWrites).toEqual(['beginExecuteMany', 'finishExecutedMany']);
    // fundOne, the pass of one funding (fundInOnePass's), runs passClaimed with its one claim.
    expect(functionText(activities, 'fundOne')).toMatch(/passClaimed\(ctx, \[claimed\]/);
    expect(
      functionText('  async function a(b: { c?: 1 }): Promise<{ d: 2 }> {\n    if (x) { y(); }\n  }\n  b() {}', 'a'),
    ).toBe('function a(b: { c?: 1 }): Promise<{ d: 2 }> {\n    if (x) { y(); }\n  }');
  });

  it("docs/fundings.md and the records' headers say a single funding's pass writes through the claimed fundings record", () => {
    const who = paragraphs(section(read('docs/fundings.md'), '## Who changes a funding'));
    const missing: string[] = [];
    for (const write of passWrites) {
      if (!who.some((paragraph) => paragraph.includes(`\`${write}\``) && paragraph.includes('single funding')))
        missing.push(`docs/fundings.md: ${write}`);
      for (const file of ['fundings/funding-record.ts', 'fundings/claimed-fundings-record.ts']) {
        const text = header(file).replace(/\s*\n\/\/\s*/g, ' ');
        if (!text.includes(write) || !text.includes('single funding')) missing.push(`${file}'s header: ${write}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("docs/ledger.md names every record function that settles a hold, with the ledger's function it calls, and who calls it", () => {
    const where = section(read('docs/ledger.md'), '## Where each step happens');
    const bullets = where.split(/\n\s*- /).map((bullet) => bullet.replace(/\s*\n\s*/g, ' '));
    const settles = [
      'fundings/funding-record.ts',
      'fundings/claimed-fundings-record.ts',
      'fundings/batch-items-record.ts',
    ].flatMap((file) => {
      const text = read(file);
      return [...text.matchAll(/ledger\.((?:settle|release)\w*)\(/g)].map((match) => ({
        member: enclosingMember(text, match.index),
        call: match[1]!,
      }));
    });
    expect(settles.map((settle) => `${settle.member} → ${settle.call}`)).toEqual(
      expect.arrayContaining([
        'settleHold → settleFunding',
        'finishExecutedMany → settleMany',
        'releaseCancelledBatchItems → releaseBatchItems',
      ]),
    );
    const wrong = settles.flatMap(({ member, call }) => {
      const bullet = bullets.find((text) => text.includes(`\`${member}\``));
      if (!bullet) return [`${member}: not named`];
      if (!bullet.includes(`\`ledger.${call}\``)) return [`${member}: its bullet does not name ledger.${call}`];
      // A write the one pass makes serves a single funding too.
      if (passWrites.includes(member) && !bullet.includes('single funding'))
        return [`${member}: a single funding's pass settles through it`];
      return [];
    });
    expect(wrong).toEqual([]);
  });

  it('lists every code a FAILED funding carries, and says a code comes from old histories only when no current code writes it', () => {
    const row = /^\| `FAILED` \|[^|]*\|([^\n]*)\|$/m.exec(read('docs/fundings.md'))?.[1] ?? '';
    // Each code with its note: `CODE` (note), split at the top level of the list.
    const codes = [...row.matchAll(/`([A-Z][A-Z0-9_]+)`(?: \(([^()]*(?:\([^()]*\)[^()]*)*)\))?/g)].map((match) => ({
      code: match[1]!,
      note: match[2] ?? '',
    }));
    expect(codes.map((entry) => entry.code)).toEqual(
      expect.arrayContaining(['CANCELLED', 'EXECUTE_FAILED', 'RESOLVED_FAILED']),
    );
    // Every outcome code that is not the wallet's 60xx decline (a DECLINED funding's) or a REJECTED one.
    const rejected = [
      ...(/^\| `REJECTED` \|[^\n]*$/m.exec(read('docs/fundings.md'))?.[0] ?? '').matchAll(/`([A-Z0-9_]+)`/g),
    ].map((match) => match[1]!);
    const written = Object.keys(fundingErrorMessages).filter(
      (code) => !/^60\d\d$/.test(code) && !rejected.includes(code),
    );
    expect(written.filter((code) => !codes.some((entry) => entry.code === code))).toEqual([]);
    // "from old histories only": every writer the note names is a previous release's run.
    const oldOnly = codes.filter(
      ({ note }) => note !== '' && note.split(';').every((writer) => /histor|previous release/.test(writer)),
    );
    const current = sources.filter(({ file }) => !file.startsWith('workflows/'));
    const wrong = oldOnly.flatMap(({ code }) =>
      current
        .filter(({ text }) => text.includes(`'${code}'`))
        .map(({ file }) => `${code}: said to come from old histories only, written by ${file}`),
    );
    expect(wrong).toEqual([]);
  });

  it('builds every status guard from the transition table: none written by hand', () => {
    const tables = { funding: fundingTransitions, payment: paymentTransitions } as const;
    const handWritten: string[] = [];
    const wrong: string[] = [];
    for (const file of [
      'fundings/funding-record.ts',
      'fundings/claimed-fundings-record.ts',
      'fundings/batch-items-record.ts',
      'payments/payment-record.ts',
    ]) {
      const text = read(file);
      // A raw UPDATE that sets a status literal and guards on status literals.
      for (const match of text.matchAll(
        /UPDATE (funding|payment)\b[^`]*?status = '([A-Z_]+)'::"\w+Status"[^`]*?WHERE([^`]*?)(?:RETURNING|`)/g,
      )) {
        const guard = [...match[3]!.matchAll(/status (?:=|IN \() ?'([A-Z_]+)'/g)].map((literal) => literal[1]!);
        if (guard.length === 0) continue;
        const member = enclosingMember(text, match.index);
        handWritten.push(member);
        const table = tables[match[1] as keyof typeof tables] as TransitionTable<string>;
        const from = sourcesOf(table, match[2]!);
        if (JSON.stringify([...guard].sort()) !== JSON.stringify([...from].sort()))
          wrong.push(
            `${file} ${member}: guards ${guard.join(', ')}; the table moves to ${match[2]} from ${from.join(', ')}`,
          );
      }
    }
    expect(handWritten).toEqual([]);
    expect(wrong).toEqual([]);
    // The docs say so, and name no guard as written by hand.
    const guards = paragraphs(read('docs/fundings.md')).find((paragraph) => paragraph.includes('`sourcesOf`')) ?? '';
    expect(guards).toMatch(/for every move/);
    expect(guards).not.toMatch(/by hand/);
    expect(header('domain/transitions.ts')).not.toMatch(/still written by hand/);
  });
});

describe('the payment ids a route takes', () => {
  it("says every {paymentId} takes walletflow's id or the wallet's, as the payment service's lookup does", () => {
    // The service finds a payment by either id (its view and its resolve go through find).
    expect(read('payments/payment-service.ts')).toMatch(
      /const find = \(id: string\) => record\.findByEitherIdWithEvents\(id\);/,
    );
    expect(read('payments/payment-record.ts')).toMatch(
      /findByEitherIdWithEvents:[^\n]*\n[^\n]*\n\s*where: isUuid\(id\) \? \{ OR: \[\{ id \}, \{ walletPaymentId: id \}\] \} : \{ walletPaymentId: id \}/,
    );
    const document = buildOpenApiDocument() as {
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; description?: string }> }>>;
    };
    const described = Object.entries(document.paths)
      .filter(([route]) => route.includes('{paymentId}'))
      .flatMap(([route, item]) =>
        Object.entries(item).map(([method, operation]) => ({
          at: `${method.toUpperCase()} ${route}`,
          description: operation.parameters?.find((parameter) => parameter.name === 'paymentId')?.description ?? '',
        })),
      );
    expect(described.map((each) => each.at)).toEqual([
      'GET /ops/payments/{paymentId}',
      'POST /ops/payments/{paymentId}/resolve',
    ]);
    const eitherId = (text: string) =>
      /walletflow[’']s id/.test(text) && /wallet[’']s payment id/.test(text) && !/not the wallet/.test(text);
    expect(
      described.filter((each) => !eitherId(each.description)).map((each) => `${each.at}: ${each.description}`),
    ).toEqual([]);
    const program = new Command();
    registerOpsCommands(program);
    const get = program.commands
      .find((command) => command.name() === 'payments')!
      .commands.find((command) => command.name() === 'get')!;
    expect(eitherId(get.registeredArguments[0]!.description)).toBe(true);
    const words = /^\| `paymentId` \|[^\n]*$/m.exec(read('docs/architecture.md'))?.[0] ?? '';
    expect(words).toMatch(/`\{paymentId\}`[^|]*takes either/);
  });
});

describe("the batch runner's run", () => {
  it("says one figure for a run's chunks and events: the chunks from the code, the events as the bench measured them", () => {
    const runner = read('workflows/fund-batch.ts');
    const constant = (name: string) =>
      Number(new RegExp(`const ${name} = ([\\d_]+);`).exec(runner)?.[1]?.replace(/_/g, ''));
    const maxInFlight = environmentSchema.shape.BATCH_MAX_IN_FLIGHT.parse(undefined);
    // fundBatch dispatches chunks of ceil(inFlight / CHUNKS_IN_FLIGHT) items.
    expect(runner).toContain('Math.ceil(inFlight / CHUNKS_IN_FLIGHT)');
    const chunkSize = Math.ceil(maxInFlight / constant('CHUNKS_IN_FLIGHT'));
    const chunks = constant('DEFAULT_ITEMS_PER_RUN') / chunkSize;
    expect(chunks).toBe(125);
    const measured = readdirSync(path.join(root, 'bench/results'))
      .filter((file) => file.endsWith('.json'))
      .map(
        (file) =>
          JSON.parse(read(`bench/results/${file}`)) as {
            maxInFlight?: number;
            batch?: { history?: { largestRunEvents?: number } };
          },
      )
      .filter((report) => report.maxInFlight === maxInFlight && report.batch?.history?.largestRunEvents !== undefined)
      .map((report) => report.batch!.history!.largestRunEvents!);
    expect(measured.length).toBeGreaterThan(0);
    const events = Math.round(Math.max(...measured) / 100) * 100;
    const said = (text: string) => ({
      chunks: /(\d[\d,]*) chunks of (\d+)/
        .exec(text)
        ?.slice(1, 3)
        .map((figure) => Number(figure.replace(/,/g, ''))),
      events: Number(/about (\d[\d,]*) events/.exec(text)?.[1]?.replace(/,/g, '')),
    });
    const comment =
      /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*const DEFAULT_ITEMS_PER_RUN/
        .exec(runner)?.[1]
        ?.replace(/\s*\n\s*\*\s*/g, ' ') ?? '';
    const architecture =
      paragraphs(read('docs/architecture.md')).find((paragraph) => paragraph.includes('continues as new every')) ?? '';
    for (const text of [comment, architecture])
      expect(said(text), text.slice(0, 80)).toEqual({ chunks: [chunks, chunkSize], events });
  });
});

describe('what a worker starts once', () => {
  const main = read('worker/main.ts');
  const load = read('lib/config/load-config.ts');
  /** The variable load-config reads `config.<group>.<key>` from. */
  const variableOf = (group: string, key: string) =>
    new RegExp(`\\b${group}: \\{[^}]*\\b${key}: e\\.([A-Z][A-Z0-9_]+)`).exec(load)?.[1];
  /** The Schedules and the deliverer a worker starts when missing, and the settings it gives them. */
  const startedOnce = [
    ...main.matchAll(/\b(ensure\w+Schedule|startDeliverWebhooks)\(temporal, \{([\s\S]*?)\}\);/g),
  ].map((match) => ({
    start: match[1]!,
    variables: [...match[2]!.matchAll(/config\.(\w+)\.(\w+)/g)].map(
      (path) => variableOf(path[1]!, path[2]!) ?? `config.${path[1]}.${path[2]}`,
    ),
  }));

  it('reads what the worker starts once, and that it leaves a running one as it is', () => {
    expect(startedOnce).toEqual([
      {
        start: 'ensureSweepSchedule',
        variables: ['TEMPORAL_TASK_QUEUE', 'RECONCILE_EVERY_MINUTES', 'RECONCILE_AFTER_SECONDS'],
      },
      { start: 'startDeliverWebhooks', variables: ['TEMPORAL_TASK_QUEUE', 'WEBHOOK_POLL_INTERVAL_MS'] },
      {
        start: 'ensurePurgeSchedule',
        variables: ['TEMPORAL_TASK_QUEUE', 'PURGE_EVERY_MINUTES', 'PURGE_RETENTION_HOURS'],
      },
    ]);
    // A Schedule that exists is left as it is (created, or 'exists'); a running deliverer is used as it runs.
    for (const file of ['worker/sweep-schedule.ts', 'worker/purge-schedule.ts']) {
      expect(read(file), file).toMatch(/if \(error instanceof ScheduleAlreadyRunning\) return 'exists';/);
      expect(read(file), file).not.toMatch(/\.update\(/);
    }
    expect(read('workflows/deliver-webhooks.contract.ts')).toMatch(/workflowIdConflictPolicy: 'USE_EXISTING'/);
  });

  it('says in docs/configuration.md that a running Schedule or deliverer keeps what it was started with, and in docs/operations.md how a change reaches a Schedule', () => {
    const rows = read('docs/configuration.md');
    const wrong = [...new Set(startedOnce.flatMap((each) => each.variables))].filter(
      (name) =>
        !/keeps? (?:its own|the one)/.test(new RegExp(`^\\| \`${name}\` \\|[^\\n]*$`, 'm').exec(rows)?.[0] ?? ''),
    );
    expect(wrong).toEqual([]);
    const operations = read('docs/operations.md');
    const scheduleIds = [read('workflows/sweep.contract.ts'), read('workflows/purge-expired.contract.ts')].map(
      (text) => /export const \w+ScheduleId = '([^']+)'/.exec(text)![1]!,
    );
    expect(scheduleIds.filter((id) => !operations.includes(`temporal schedule delete --schedule-id ${id}`))).toEqual(
      [],
    );
  });
});

describe("a process's PostgreSQL connections", () => {
  /** What a process's main module opens: its main pool, the token vault's refresh pool, the lanes' bell's LISTEN. */
  const connectionsOf = (file: string) => {
    const text = read(file);
    const count = (pattern: RegExp) => [...text.matchAll(pattern)].length;
    // Each at its default size: a size passed here would change the figure (and fail the pattern).
    expect(text, file).not.toMatch(/create(?:Api|Worker)Database\([^)]*maxConnections/);
    return (
      count(/\bcreate(?:Api|Worker)Database\(config\.databaseUrl\)/g) * DEFAULT_POOL_SIZE +
      count(/\bcreateRefreshPool\(/g) * refreshPoolSize(DEFAULT_POOL_SIZE) +
      count(/\bcreateLaneBell\(/g)
    );
  };

  it('docs/running-at-scale.md gives the API and the worker the connections their main modules open', () => {
    const api = connectionsOf('api/main.ts');
    const worker = connectionsOf('worker/main.ts');
    const text = read('docs/running-at-scale.md').replace(/\s*\n\s*/g, ' ');
    const said = /an API process may open \*\*(\d+) connections\*\* and a worker process \*\*(\d+)\*\*/.exec(text);
    expect(said?.slice(1).map(Number)).toEqual([api, worker]);
    const budgets = [
      ...text.matchAll(/`[^`]*×[^`]*< ?max_connections`|`[^`]*×[^`]*` must stay under `max_connections`/g),
    ];
    expect(budgets.length).toBeGreaterThan(0);
    for (const [budget] of budgets) expect(budget).toContain(`api × ${api} + workers × ${worker}`);
  });
});

describe("the scripts' headers", () => {
  /** The npm install commands a text names (`npm ci`, `npm install`), in a comment or as a command. */
  const installs = (text: string) => [
    ...new Set([...text.matchAll(/\bnpm (ci|install)\b/g)].map((match) => `npm ${match[1]}`)),
  ];

  it('name only the npm install commands their script runs', () => {
    expect(installs('# npm ci, or npm install\nnpm run x')).toEqual(['npm ci', 'npm install']);
    const wrong = sources
      .filter(({ file }) => file.endsWith('.sh'))
      .flatMap(({ file, text }) => {
        const lines = text.split('\n');
        const headerEnd = lines.findIndex((line, index) => index > 0 && !line.startsWith('#'));
        const said = installs(lines.slice(1, headerEnd).join('\n'));
        const run = installs(lines.filter((line) => !/^\s*#/.test(line)).join('\n'));
        return said
          .filter((command) => !run.includes(command))
          .map((command) => `${file}: its header says ${command}, which it never runs`);
      });
    expect(wrong).toEqual([]);
  });
});

describe('histories from before fencing', () => {
  /** Every payload of a stored history, decoded: a claim's fence shows as a `fence` member. */
  const payloadTexts = (node: unknown, out: string[] = []): string[] => {
    if (Array.isArray(node)) for (const item of node) payloadTexts(item, out);
    else if (node && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (typeof record.data === 'string' && record.metadata)
        out.push(Buffer.from(record.data, 'base64').toString('utf8'));
      for (const [key, value] of Object.entries(record)) if (key !== 'metadata') payloadTexts(value, out);
    }
    return out;
  };

  it("are named in docs/architecture.md's unfenced writes exactly when an archive folder holds some", () => {
    const archive = path.join(root, 'test/replay/histories/archive');
    const files = readdirSync(archive, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.json'));
    /** The archive folders (by label) that hold a fundWallet or payWallet history with no fence in it. */
    const unfenced = new Set(
      files.flatMap((file) => {
        const history = JSON.parse(readFileSync(path.join(archive, file), 'utf8')) as {
          events: Array<{ workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }>;
        };
        const type = history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
        if (type !== fundWalletWorkflowType && type !== payWalletWorkflowType) return [];
        return payloadTexts(history.events).some((text) => /"fence"\s*:/.test(text))
          ? []
          : [`test/replay/histories/archive/${file.split(path.sep)[0]}/`];
      }),
    );
    const said =
      paragraphs(read('docs/architecture.md')).find((paragraph) => paragraph.includes('Writes with no fence')) ?? '';
    if (unfenced.size === 0) expect(said).not.toMatch(/before fencing/);
    else {
      expect(said).toMatch(/before fencing/);
      expect([...unfenced].filter((folder) => !said.includes(`\`${folder}\``))).toEqual([]);
    }
    // The reading sees a claim where a history has one (a run today that reconciled: its pass's fence).
    expect(
      payloadTexts(JSON.parse(read('test/replay/histories/execute-unknown-reconciled.json'))).some((text) =>
        /"fence"\s*:/.test(text),
      ),
    ).toBe(true);
  });
});
