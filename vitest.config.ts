import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Three files at once: most wait on PostgreSQL, Temporal and HTTP rather than the CPU, and each
    // worker has its own database (test/support/test-database.ts). docs/testing.md has the figures.
    maxWorkers: 3,
    reporters: ['default'],
  },
});
