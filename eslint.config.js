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
    patterns.push({ regex: folderImport(other), allowTypeImports: true, message: `${folder}/ may import only types from ${other}/ (${rule.why})` });
  }
  if (rule.contracts && !rule.imports.includes('workflows')) {
    patterns.push({
      regex: '^(\\.\\./)+workflows/(?![\\w-]+\\.contract\\.ts$)',
      message: `${folder}/ reaches workflows only through their contracts (workflows/*.contract.ts)`,
    });
  }
  patterns.push(...(rule.packages ?? []).map((name) => ({ group: [name], message: `${folder}/ may not use ${name} (${rule.why})` })));
  patterns.push(
    ...(rule.typeOnlyPackages ?? []).map((name) => ({ group: [name], allowTypeImports: true, message: `${folder}/ may import only types from ${name} (${rule.why})` })),
  );
  return { files: [`${folder}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

// Temporal's typed boundary (design/engineering.md): each workflow's names live in its contract,
// workflows/<name>.contract.ts, and nowhere else as bare strings.
const workflowTypeNames = /^(fundWallet|payWallet|reconcileFundings|onboardEmbeddedSession)$/;
// A Temporal signal, query or update name is one word; SQL (pg's client.query('SELECT …')) never is.
const nameLike = /^[A-Za-z_$][\w$-]*$/;
const stringArgument = (pattern) => [
  `[arguments.0.type='Literal'][arguments.0.value=${pattern}]`,
  `[arguments.0.type='TemplateLiteral'][arguments.0.expressions.length=0][arguments.0.quasis.0.value.cooked=${pattern}]`,
];
const useContract = 'use its workflow contract (workflows/*.contract.ts)';
const temporalNamesOutsideContracts = [
  ...[`Literal[value=${workflowTypeNames}]`, `TemplateLiteral[expressions.length=0][quasis.0.value.cooked=${workflowTypeNames}]`].map((selector) => ({
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
  // Page scripts (api/*/assets/*.js): plain browser JavaScript, served as files to the pages (see
  // api/embedded/page-assets.ts), not modules. The browser globals they use are listed here by hand
  // (the `globals` package is not a dependency of ours): a script that needs another one adds it.
  // Temporal names only in the contracts: every other file starts, signals, queries and updates a
  // workflow through its contract, so a renamed workflow or signal cannot leave a stale string behind.
  // (The stored JSON histories carry the same names but are not linted.)
  {
    ignores: ['workflows/*.contract.ts'],
    rules: { 'no-restricted-syntax': ['error', ...temporalNamesOutsideContracts] },
  },
  {
    files: ['api/*/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { document: 'readonly', history: 'readonly', location: 'readonly', fetch: 'readonly', setTimeout: 'readonly' },
    },
    rules: { strict: ['error', 'function'] },
  },
);
