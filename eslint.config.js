// Lint: typescript-eslint's recommended rules plus the folder boundaries of design/architecture.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const boundary = (group, message) => ({ group, message });

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
  // Page scripts (api/*/assets/*.js): plain browser JavaScript, served as files to the pages (see
  // api/embedded/page-assets.ts), not modules. The browser globals they use are listed here by hand
  // (the `globals` package is not a dependency of ours): a script that needs another one adds it.
  {
    files: ['api/*/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { document: 'readonly', history: 'readonly', location: 'readonly', fetch: 'readonly', setTimeout: 'readonly' },
    },
    rules: { strict: ['error', 'function'] },
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
