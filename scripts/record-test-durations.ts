// Records each test file's duration from a run's JSON report (default: the one scripts/test.sh
// writes) into test/file-durations.json, which orders a fresh clone's run (test/longest-first.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const reportPath = path.resolve(process.argv[2] ?? path.join(root, '.walletflow/test-results.json'));
const report = JSON.parse(readFileSync(reportPath, 'utf8')) as {
  testResults: Array<{ name: string; startTime: number; endTime: number }>;
};
const durations = Object.fromEntries(
  report.testResults
    // From the file's test/ folder on, so that a report from another clone names the same files.
    .map(
      (file) =>
        [
          file.name.slice(file.name.lastIndexOf('/test/') + 1),
          Math.round((file.endTime - file.startTime) / 100) / 10,
        ] as const,
    )
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(path.join(root, 'test/file-durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
console.log(
  `test/file-durations.json: ${Object.keys(durations).length} files from ${path.relative(process.cwd(), reportPath)}`,
);
