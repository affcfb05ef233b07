// Lint: typescript-eslint's recommended rules plus the folder boundaries of docs/architecture.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importRules } from './import-rules.js';

const projectFolders = Object.keys(importRules);

/** A relative import that climbs to the project root and enters `folder` (a subfolder of the same name is not it). */
const folderImport = (folder) => `^(\\.\\./)+${folder}/`;

/**
 * One `no-restricted-imports` block per row of the import table (import-rules.js, the table in
 * docs/architecture.md): every project folder the row does not allow is forbidden. A row may allow
 * a folder for type imports only, or only its workflow contracts (`workflows/*.contract.ts`).
 */
function boundaryBlock(folder) {
  const rule = importRules[folder];
  const forbidden = projectFolders.filter((other) => other !== folder && !rule.imports.includes(other));
  const patterns = forbidden
    .filter((other) => !(other === 'workflows' && rule.contracts))
    .filter((other) => !rule.typeOnly?.includes(other))
    .map((other) => ({ regex: folderImport(other), message: `${folder}/ may not import ${other}/ (${rule.why})` }));
  for (const other of rule.typeOnly ?? []) {
    patterns.push({
      regex: folderImport(other),
      allowTypeImports: true,
      message: `${folder}/ may import only types from ${other}/ (${rule.why})`,
    });
  }
  if (rule.contracts && !rule.imports.includes('workflows')) {
    patterns.push({
      regex: '^(\\.\\./)+workflows/(?![\\w-]+\\.contract\\.ts$)',
      message: `${folder}/ reaches workflows only through their contracts (workflows/*.contract.ts)`,
    });
  }
  patterns.push(
    ...(rule.packages ?? []).map((name) => ({
      group: [name],
      message: `${folder}/ may not use ${name} (${rule.why})`,
    })),
  );
  patterns.push(
    ...(rule.typeOnlyPackages ?? []).map((name) => ({
      group: [name],
      allowTypeImports: true,
      message: `${folder}/ may import only types from ${name} (${rule.why})`,
    })),
  );
  return { files: [`${folder}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

// Temporal's typed boundary (docs/architecture.md, where each state change is decided): each workflow's names live in
// its contract,
// workflows/<name>.contract.ts, and nowhere else as bare strings.
const workflowTypeNames =
  /^(fundWallet|payWallet|reconcileFundings|onboardEmbeddedSession|purgeExpired|deliverWebhooks)$/;
// A Temporal signal, query or update name is one word; SQL (pg's client.query('SELECT …')) never is.
const nameLike = /^[A-Za-z_$][\w$-]*$/;
const stringArgument = (pattern) => [
  `[arguments.0.type='Literal'][arguments.0.value=${pattern}]`,
  `[arguments.0.type='TemplateLiteral'][arguments.0.expressions.length=0][arguments.0.quasis.0.value.cooked=${pattern}]`,
];
const useContract = 'use its workflow contract (workflows/*.contract.ts)';
const temporalNamesOutsideContracts = [
  ...[
    `Literal[value=${workflowTypeNames}]`,
    `TemplateLiteral[expressions.length=0][quasis.0.value.cooked=${workflowTypeNames}]`,
  ].map((selector) => ({
    selector,
    message: `a workflow type name as a bare string: ${useContract}, its type-name constant or start function`,
  })),
  ...stringArgument(nameLike).map((argument) => ({
    selector: `CallExpression[callee.type='MemberExpression'][callee.property.name=/^(signal|query|executeUpdate|startUpdate)$/]${argument}`,
    message: `a signal, query or update by name: pass its definition instead (${useContract})`,
  })),
  ...stringArgument('/.*/').map((argument) => ({
    selector: `CallExpression:matches([callee.object.property.name='workflow'], [callee.object.name='workflow'])[callee.property.name=/^(start|execute|signalWithStart)$/]${argument}`,
    message: `a workflow started by a name: ${useContract}, its start function`,
  })),
  {
    selector: 'CallExpression[callee.name=/^define(Signal|Query|Update)$/]',
    message: 'signals, queries and updates are defined in their workflow contract (workflows/*.contract.ts)',
  },
];

// Only the owner of a table writes it. The records write a funding's or a payment's rows
// (fundings/funding-record.ts; a batch's items stored and ended set-based,
// fundings/batch-items-record.ts; the fundings a pass claimed, moved set-based,
// fundings/claimed-fundings-record.ts; treasury fundings accepted together, fundings/treasury-fundings-record.ts;
// payments/payment-record.ts): a write anywhere else would skip the transition
// table's guard and
// the timeline event that goes with every move. The ledger writes the
// ledger's tables (ledger/, docs/ledger.md): a write anywhere else would skip its zero-sum postings,
// its idempotent references and its limits. The console's sessions and the attempt counts have one
// module each in access/ (a session written elsewhere could skip its end; a count, its limit).
// Flagged outside each owner: a Prisma write method on one
// of its models (`x.funding.update(…)`, `tx.ledgerEntry.create(…)`), and raw SQL that writes one of
// its tables. A local rule rather than `no-restricted-syntax`: flat config lets the last object
// naming a rule win, so two `no-restricted-syntax` blocks for the same files would drop one.
/** Each table family, the Prisma models that reach it, and the files that alone may write it. */
const tableOwners = [
  {
    tables: 'funding|funding_event|payment|payment_event',
    models: /^(funding|fundingEvent|payment|paymentEvent)$/,
    owners:
      /^(fundings\/(funding|batch-items|claimed-fundings|treasury-fundings)-record|payments\/payment-record)\.ts$/,
    what: 'the funding and payment tables',
    who: 'the records (fundings/funding-record.ts, fundings/batch-items-record.ts, fundings/claimed-fundings-record.ts, fundings/treasury-fundings-record.ts, payments/payment-record.ts): they guard each move by the transition table and write its event',
  },
  {
    tables: 'funding_batch',
    models: /^fundingBatch$/,
    owners: /^fundings\/batch-record\.ts$/,
    what: 'the funding batches',
    who: 'the batch record (fundings/batch-record.ts): it guards each move by the batch transition table',
  },
  {
    tables: 'funding_batch_tally',
    models: /^fundingBatchTally$/,
    // No file: the funding table's triggers keep it, in the statement that writes the items.
    owners: /(?!)/,
    what: "the batches' tallies",
    who: "the funding table's triggers (prisma/migrations/20261128002457_funding_batch_tally)",
  },
  {
    tables: 'ops_action|ops_action_budget',
    models: /^(opsAction|opsActionBudget)$/,
    owners: /^audit\/ops-actions\.ts$/,
    what: 'the audit of ops writes',
    who: 'audit/ops-actions.ts (one row per ops write request, within its budget for requests without a session or key)',
  },
  {
    tables: 'console_session|console_sign_in',
    models: /^(consoleSession|consoleSignIn)$/,
    owners: /^access\/console-sessions\.ts$/,
    what: "the console's sessions and sign-ins",
    who: 'access/console-sessions.ts (sessions end by their own rules, and only their hash of the cookie is kept)',
  },
  {
    tables: 'attempt_count',
    models: /^attemptCount$/,
    owners: /^access\/attempt-limits\.ts$/,
    what: 'the attempt counts',
    who: 'access/attempt-limits.ts (a count is taken within its limit in one statement)',
  },
  {
    tables: 'ledger_account|ledger_transaction|ledger_entry',
    models: /^(ledgerAccount|ledgerTransaction|ledgerEntry)$/,
    owners: /^ledger\//,
    what: 'the ledger tables',
    who: 'the ledger (ledger/): it posts balanced, idempotent transactions within the limits',
  },
  {
    tables: 'settlement_run|settlement_line',
    models: /^(settlementRun|settlementLine)$/,
    owners: /^ledger\/settlement-runs\.ts$/,
    what: 'the settlement runs and their lines',
    who: 'the settlement runs (ledger/settlement-runs.ts): one RUNNING run a day, its progress counted with the lines it stores',
  },
];
const prismaWrites =
  /^(create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany)$/;
// UPDATE needs its SET, so that prose such as "could not update payment" is not taken for SQL.
const sqlWriteOf = (tables) =>
  new RegExp(
    `\\b(INSERT\\s+INTO|DELETE\\s+FROM|TRUNCATE(\\s+TABLE)?)\\s+"?(${tables})"?(?![\\w.])` +
      `|\\bUPDATE\\s+"?(${tables})"?\\s+(AS\\s+)?(\\w+\\s+)?SET\\b`,
    'i',
  );
const recordsOnlyWrite = {
  meta: {
    type: 'problem',
    docs: {
      description: 'the funding, payment and ledger tables are written by their owners only (the records, the ledger)',
    },
    messages: { write: 'only {{who}} write {{what}}' },
    schema: [],
  },
  create(context) {
    const file = context.filename.split('\\').join('/');
    const relative = file.startsWith(`${context.cwd}/`) ? file.slice(context.cwd.length + 1) : file;
    const guarded = tableOwners
      .filter((owner) => !owner.owners.test(relative))
      .map((owner) => ({ ...owner, sql: sqlWriteOf(owner.tables) }));
    const isName = (node, pattern) => node.type === 'Identifier' && pattern.test(node.name);
    const reportSql = (node, text) => {
      const owner = guarded.find((candidate) => candidate.sql.test(text));
      if (owner) context.report({ node, messageId: 'write', data: { who: owner.who, what: owner.what } });
    };
    return {
      MemberExpression(node) {
        const model = node.object;
        if (
          node.computed ||
          model.type !== 'MemberExpression' ||
          model.computed ||
          !isName(node.property, prismaWrites)
        )
          return;
        const owner = guarded.find((candidate) => isName(model.property, candidate.models));
        if (owner)
          context.report({
            node,
            messageId: 'write',
            data: { who: owner.who, what: `the ${model.property.name} model` },
          });
      },
      TemplateLiteral(node) {
        reportSql(node, node.quasis.map((quasi) => quasi.value.raw).join(' '));
      },
      Literal(node) {
        if (typeof node.value === 'string') reportSql(node, node.value);
      },
    };
  },
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'generated/**', '.walletflow/**', 'bench/results/**', 'dist/**'] },
  js.configs.recommended,
  // The `walletflow` launcher: plain JavaScript for Node.js (the Node globals it uses, by hand).
  { files: ['bin/*.mjs'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  // Folder boundaries: one block per row of the import table.
  ...projectFolders.filter((folder) => importRules[folder].enforced !== false).map(boundaryBlock),
  // Temporal names only in the contracts: every other file starts, signals, queries and updates a
  // workflow through its contract, so a renamed workflow or signal cannot leave a stale string behind.
  // (The stored JSON histories carry the same names but are not linted.)
  {
    ignores: ['workflows/*.contract.ts'],
    rules: { 'no-restricted-syntax': ['error', ...temporalNamesOutsideContracts] },
  },
  // The owners' write monopolies (see tableOwners above; the rule knows each owner's files). Tests
  // seed and simulate crashes by writing directly; prisma/ holds the migrations.
  {
    ignores: ['test/**', 'prisma/**'],
    plugins: { records: { rules: { 'only-records-write': recordsOnlyWrite } } },
    rules: { 'records/only-records-write': 'error' },
  },
  // The one exception: `walletflow bench --preload` writes months of history straight into the
  // funding, payment and ledger tables with set-based SQL (a million fundings cannot go through the
  // records one by one in a bench's time). It writes what the records and the ledger write for each
  // outcome, in one transaction, and the flat-with-data test checks the ledger's invariants after it.
  {
    files: ['harness/bench-preload.ts'],
    rules: { 'records/only-records-write': 'off' },
  },
  // And its companion for `walletflow bench --console`: the finished batches, webhook deliveries
  // and audit rows the console's pages show beside the preload's history, written the same way (a
  // batch of 100,000 items cannot be run through the batch runner in a bench's time).
  {
    files: ['harness/bench-console.ts'],
    rules: { 'records/only-records-write': 'off' },
  },
  // And for `walletflow bench --settlement` and the settlement tests: a day of approved fundings
  // (rows, timelines, holds and posts, the ledger's triggers running) planted in a few statements
  // against transfers the sandbox planted (100,000 fundings cannot run through the workflow in a
  // bench's time).
  {
    files: ['harness/settlement-day.ts'],
    rules: { 'records/only-records-write': 'off' },
  },
  // Page scripts (api/*/assets/*.js): plain browser JavaScript, served as files to the pages (see
  // api/embedded/page-assets.ts), not modules. The browser globals they use are listed here by hand
  // (the `globals` package is not a dependency of ours): a script that needs another one adds it.
  {
    files: ['api/*/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        history: 'readonly',
        location: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
        // The console's script (api/console/assets/console.js).
        navigator: 'readonly',
        EventSource: 'readonly',
        Element: 'readonly',
        HTMLFormElement: 'readonly',
      },
    },
    rules: { strict: ['error', 'function'] },
  },
  // Lines of at most 120 characters (prettier, run in lint too, wraps code to that width; this
  // holds comments to it as well). A string, a template literal (SQL, a page's HTML), a regular
  // expression or a URL may run longer: breaking one would change what it says or hide it.
  {
    files: ['**/*.ts', '**/*.js'],
    ignores: ['client/*.generated.ts'],
    rules: {
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
);
