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
