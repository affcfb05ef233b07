// After each test file, its worker's database is made again from the migrated template
// (test/support/test-database.ts says why), whatever the file left in it.
import { afterAll } from 'vitest';
import { resetTestDatabase } from './support/test-database.ts';

afterAll(async () => {
  await resetTestDatabase();
}, 120_000);
