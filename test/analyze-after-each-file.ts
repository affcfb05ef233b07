// After each test file, its worker's database is analyzed as autovacuum would analyze it
// (test/support/analyze-like-autovacuum.ts says why).
import { afterAll } from 'vitest';
import { analyzeLikeAutovacuum } from './support/analyze-like-autovacuum.ts';
import { testDatabaseUrl } from './support/test-database.ts';

afterAll(async () => {
  await analyzeLikeAutovacuum(testDatabaseUrl());
}, 120_000);
