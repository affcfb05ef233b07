// The unit project's files run without the database reset after each file (vitest.config.ts): they share the
// workers' databases with the suite's files, so one that wrote there would leave its rows to the next suite file.
// The test database is refused them, with where such a file belongs.
import { describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../support/test-database.ts';

describe('a unit file', () => {
  it('is refused the test database: a file that needs one belongs in test/integration/', () => {
    expect(() => testDatabaseUrl()).toThrow(
      'a unit file uses no database: a file that needs one belongs in test/integration/',
    );
  });
});
