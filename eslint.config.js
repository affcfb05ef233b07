// Lint: typescript-eslint's recommended rules plus the folder boundaries of design/architecture.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const boundary = (group, message) => ({ group, message });

// Only the records write a funding's or a payment's rows (fundings/funding-record.ts,
// payments/payment-record.ts): a write anywhere else would skip the transition table's guard and
// the timeline event that goes with every move. Flagged: a Prisma write method on one of the four
// models (`x.funding.update(…)`, `tx.paymentEvent.create(…)`), and raw SQL that writes one of the
// four tables. A local rule rather than `no-restricted-syntax`: flat config lets the last object
// naming a rule win, so two `no-restricted-syntax` blocks for the same files would drop one.
const recordTables = 'funding|funding_event|payment|payment_event';
const recordModels = /^(funding|fundingEvent|payment|paymentEvent)$/;
const prismaWrites = /^(create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany)$/;
// UPDATE needs its SET, so that prose such as "could not update payment" is not taken for SQL.
const sqlWrite = new RegExp(
  `\\b(INSERT\\s+INTO|DELETE\\s+FROM|TRUNCATE(\\s+TABLE)?)\\s+"?(${recordTables})"?(?![\\w.])` +
    `|\\bUPDATE\\s+"?(${recordTables})"?\\s+(AS\\s+)?(\\w+\\s+)?SET\\b`,
  'i',
);
const recordsOnlyWrite = {
  meta: {
    type: 'problem',
    docs: { description: 'the funding, funding_event, payment and payment_event tables are written by their records only' },
    messages: { write: 'only the records write {{what}} (fundings/funding-record.ts, payments/payment-record.ts): they guard each move by the transition table and write its event' },
    schema: [],
  },
  create(context) {
    const isName = (node, pattern) => node.type === 'Identifier' && pattern.test(node.name);
    return {
      MemberExpression(node) {
        const model = node.object;
        if (node.computed || model.type !== 'MemberExpression' || model.computed) return;
        if (isName(model.property, recordModels) && isName(node.property, prismaWrites)) {
          context.report({ node, messageId: 'write', data: { what: `the ${model.property.name} model` } });
        }
      },
      TemplateLiteral(node) {
        if (sqlWrite.test(node.quasis.map((quasi) => quasi.value.raw).join(' '))) context.report({ node, messageId: 'write', data: { what: 'the funding and payment tables' } });
      },
      Literal(node) {
        if (typeof node.value === 'string' && sqlWrite.test(node.value)) context.report({ node, messageId: 'write', data: { what: 'the funding and payment tables' } });
      },
    };
  },
};

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
    // The records' write monopoly (see recordsOnlyWrite above). Tests seed and simulate crashes
    // by writing directly; prisma/ holds the migrations.
    ignores: ['fundings/funding-record.ts', 'payments/payment-record.ts', 'test/**', 'prisma/**'],
    plugins: { records: { rules: { 'only-records-write': recordsOnlyWrite } } },
    rules: { 'records/only-records-write': 'error' },
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
