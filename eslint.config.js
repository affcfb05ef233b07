// Lint: typescript-eslint's recommended rules plus the folder boundaries of design/architecture.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const boundary = (group, message) => ({ group, message });

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
  { ignores: ['node_modules/**', 'generated/**', '.walletflow/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  // Temporal names only in the contracts: every other file starts, signals, queries and updates a
  // workflow through its contract, so a renamed workflow or signal cannot leave a stale string behind.
  // (The stored JSON histories carry the same names but are not linted.)
  {
    ignores: ['workflows/*.contract.ts'],
    rules: { 'no-restricted-syntax': ['error', ...temporalNamesOutsideContracts] },
  },
  {
    files: ['sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        boundary(['**/wallet/**', '**/activities/**', '**/workflows/**', '**/api/**', '**/worker/**', '**/cli/**'],
          'the sandbox simulates the wallet service: it never imports partner code'),
      ] }],
    },
  },
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        boundary(['**/wallet/**', '**/activities/**', '**/workflows/**', '**/api/**', '**/worker/**', '**/cli/**', '**/lib/**', '**/sandbox/**'],
          'domain/ imports nothing of the project but domain/'),
      ] }],
    },
  },
  {
    files: ['wallet/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        boundary(['**/activities/**', '**/workflows/**', '**/api/**', '**/worker/**', '**/cli/**', '**/sandbox/**', '@temporalio/*', '**/generated/**'],
          'wallet/ is the typed client: no Temporal, no database, no partner layers above it'),
      ] }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        boundary(['**/wallet/**', '**/api/**', '**/worker/**', '**/cli/**', '**/lib/**', '**/sandbox/**', '**/generated/**', 'node:*'],
          'workflows/ is deterministic: only workflows/, and type-only imports of activities/ and domain/'),
      ] }],
    },
  },
);
