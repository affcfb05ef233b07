import { defineConfig } from 'vitest/config';
import StartOrder from './test/start-order.ts';

/**
 * Files that measure answers under load (a burst's exact 202/422 split, a session storm's wait):
 * they run after the others, one at a time, so the rest of the suite does not crowd them.
 */
const alone = [
  'test/integration/back-pressure.test.ts',
  'test/integration/session-storm.test.ts',
  // A webhook's retries in real time (an 8 s window, a round every 2 s): crowded by three CPU-bound files at once,
  // its deliverer made too few attempts in a full run of a fresh clone.
  'test/integration/webhooks.test.ts',
];

/**
 * Single-funding promise files run a second time with FUNDING_LANES=always (fundings/funding-paths.ts):
 * every promise holds whether a funding's own workflow or a lane's shared run carries it.
 */
const laneFiles = [
  'test/integration/fundings.test.ts',
  'test/integration/funding-review.test.ts',
  'test/fault/funding-chaos.test.ts',
];

const unitFiles = ['test/unit/**/*.test.ts'];

/** Each file's CPU written down when WALLETFLOW_TEST_CPU_FILE says where (scripts/test.sh sets it). */
const cpuPerFile = 'test/cpu-per-file.ts';
/**
 * Each worker's database made again after every file, empty and migrated (test/support/test-database.ts). Not after a
 * unit file: none uses the database (testDatabaseUrl refuses them), and the copy of the template was most of each
 * one's time (docs/testing.md: the unit block at a slow run's end, 25 s with it, 13 s without).
 */
const withFreshDatabase = ['test/fresh-database-after-each-file.ts', cpuPerFile];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Four files at once: many wait on PostgreSQL, Temporal and HTTP rather than the CPU, and each worker has its own
    // database (test/support/test-database.ts). Six filled a quick machine's idle cores, but on one whose every new
    // page of memory costs several times as much, where the cores are never idle, six took longer than four and failed
    // tests that wait a bounded time. docs/testing.md has the figures.
    maxWorkers: 4,
    reporters: ['default'],
    // Longest first, at most two CPU-heavy files at once, by the figures of a recorded run (test/start-order.ts).
    sequence: { sequencer: StartOrder },
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...alone, ...unitFiles],
          setupFiles: withFreshDatabase,
          // A worker process runs file after file with the modules it loaded (about 1.8 CPU s per file saved: Prisma,
          // Temporal's native bridge, Express): a file closes what it starts and leaves no global changed.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      // Unit files share their worker processes and modules (no process started per file: about a third of a CPU
      // second each): none starts a stack, fakes a module or leaves a global changed.
      {
        extends: true,
        test: {
          name: 'unit',
          include: unitFiles,
          isolate: false,
          setupFiles: [cpuPerFile],
          env: { WALLETFLOW_TEST_WITHOUT_DATABASE: '1' },
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'lanes',
          include: laneFiles,
          setupFiles: withFreshDatabase,
          env: { FUNDING_LANES: 'always' },
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'under-load',
          include: alone,
          setupFiles: withFreshDatabase,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
