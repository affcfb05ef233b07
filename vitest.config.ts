import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
