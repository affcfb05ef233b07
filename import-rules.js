// Which folder may import which: the one table behind ESLint's boundary rules (eslint.config.js)
// and the import table of docs/architecture.md (test/unit/import-graph.test.ts keeps the two equal).
// `imports`: project folders this folder may import (its own always); `typeOnly`: folders it may
// import types from only; `contracts`: it may reach workflows/ through workflows/*.contract.ts;
// `packages`: npm packages it must not use; `typeOnlyPackages`: packages it may import types from only.

/**
 * @type {Record<string, { imports: string[]; typeOnly?: string[]; contracts?: boolean; packages?: string[];
 * typeOnlyPackages?: string[]; enforced?: boolean; why: string }>}
 */
export const importRules = {
  domain: { imports: [], why: 'types, schemas, money and states shared by all: it imports nothing of the project' },
  lib: {
    imports: ['domain', 'generated'],
    why: 'infrastructure only: config, logger, metrics, database, Temporal connection, codec',
  },
  wallet: {
    imports: ['domain', 'lib'],
    packages: ['@temporalio/*'],
    why: 'the typed wallet client: no Temporal, no database, no partner layers above it',
  },
  sandbox: {
    imports: ['domain', 'lib'],
    why: 'the sandbox simulates the wallet service: it never imports partner code',
  },
  audit: { imports: ['domain', 'lib', 'wallet', 'generated'], why: 'the append-only audit of wallet calls' },
  links: {
    imports: ['domain', 'lib', 'wallet', 'generated'],
    why: 'links, their encrypted tokens, the token vault and embedded sessions',
  },
  ledger: {
    imports: ['domain', 'lib', 'generated'],
    why: "the partner's double-entry ledger: accounts, holds, postings, limits",
  },
  access: {
    imports: ['domain', 'lib', 'links', 'generated'],
    why: "who may come in: the console's sessions and sign-ins, and the attempt counts that limit sign-ins and wrong keys across processes",
  },
  reviews: {
    imports: ['domain', 'lib'],
    why: 'the review policy: a resolution goes through the waiting workflow, or through the record when none runs',
  },
  webhooks: {
    imports: ['domain', 'lib', 'links', 'generated'],
    why: "webhooks to the partner's systems: the outbox the records write to, endpoints, signing and delivery",
  },
  fundings: {
    imports: ['domain', 'lib', 'wallet', 'links', 'ledger', 'webhooks', 'reviews', 'generated'],
    contracts: true,
    why: 'the funding record owns every funding state change',
  },
  payments: {
    imports: ['domain', 'lib', 'wallet', 'links', 'ledger', 'webhooks', 'reviews', 'generated'],
    contracts: true,
    why: 'the payment record owns every payment state change',
  },
  workflows: {
    imports: ['domain'],
    packages: ['node:*', '@temporalio/worker', '@temporalio/activity'],
    typeOnlyPackages: ['@temporalio/client'],
    why: 'deterministic workflow code and its contracts, which declare the activities each workflow schedules: workflows/ and domain/ only',
  },
  activities: {
    imports: [
      'domain',
      'lib',
      'wallet',
      'links',
      'audit',
      'ledger',
      'reviews',
      'fundings',
      'payments',
      'webhooks',
      'access',
    ],
    typeOnly: ['generated'],
    contracts: true,
    why: 'side effects scheduled by workflows, through the records',
  },
  api: {
    imports: ['domain', 'lib', 'wallet', 'links', 'audit', 'ledger', 'fundings', 'payments', 'webhooks', 'access'],
    typeOnly: ['generated'],
    contracts: true,
    why: 'HTTP on top of the capabilities; it starts workflows through their contracts',
  },
  worker: {
    imports: ['domain', 'lib', 'wallet', 'links', 'audit', 'ledger', 'activities'],
    contracts: true,
    why: 'the worker process: activities, and the workflow bundle by path',
  },
  prisma: { imports: ['lib', 'generated'], why: 'the schema, migrations and the offline migration engine' },
  stack: {
    imports: ['domain', 'lib', 'sandbox'],
    why: 'the local stack cli/, harness/ and test/ share: embedded PostgreSQL, the Temporal dev server, child processes, the sandbox wiring',
  },
  cli: {
    imports: [
      'domain',
      'lib',
      'wallet',
      'links',
      'audit',
      'ledger',
      'fundings',
      'payments',
      'webhooks',
      'generated',
      'harness',
      'stack',
      'prisma',
      'sandbox',
      'client',
    ],
    contracts: true,
    why: "the operator's walletflow command and the embedded stack it starts",
  },
  harness: {
    imports: [
      'domain',
      'lib',
      'wallet',
      'links',
      'audit',
      'ledger',
      'fundings',
      'payments',
      'generated',
      'stack',
      'prisma',
      'sandbox',
    ],
    contracts: true,
    why: 'the soak and the bench drive a whole stack from outside',
  },
  client: {
    imports: [],
    why: "the ops API's typed client, generated from the OpenAPI document: self-contained, so partners can copy it",
  },
  scripts: {
    imports: ['domain', 'lib', 'prisma', 'generated', 'workflows', 'api'],
    why: 'build steps (workflow bundle, Prisma client, the ops client from the OpenAPI document)',
  },
  test: {
    imports: [
      'domain',
      'lib',
      'wallet',
      'sandbox',
      'audit',
      'links',
      'ledger',
      'reviews',
      'fundings',
      'payments',
      'webhooks',
      'access',
      'workflows',
      'activities',
      'api',
      'worker',
      'prisma',
      'cli',
      'harness',
      'stack',
      'scripts',
      'generated',
      'client',
    ],
    why: 'tests reach everything',
  },
  generated: { imports: [], enforced: false, why: "Prisma's generated client" },
};
