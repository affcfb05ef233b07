// Records each test file's wall and CPU seconds in a full run into test/file-durations.json, which orders the next
// runs (test/start-order.ts). It reads the lines test/cpu-per-file.ts wrote during the run (default: the file
// scripts/test.sh has it write, .walletflow/test-cpu.tsv; a run of `WALLETFLOW_TEST_CPU_FILE=… vitest run` too).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { recordKey, recordedFilesPath, type RecordedFile } from './start-plan.ts';

const root = path.resolve(import.meta.dirname, '..');
const source = path.resolve(process.argv[2] ?? path.join(root, '.walletflow/test-cpu.tsv'));
const files: Record<string, RecordedFile> = {};
for (const line of readFileSync(source, 'utf8').split('\n')) {
  const [file, cpu, wall, , project] = line.split('\t');
  if (!file || !project) continue;
  // From the file's test/ folder on, so that a run in another clone names the same files.
  files[recordKey(project, file.slice(file.lastIndexOf('/test/') + 1))] = {
    seconds: Number(wall),
    cpuSeconds: Number(cpu),
  };
}
if (Object.keys(files).length === 0) {
  // A file of another run's format (no project column) or an empty one: the recorded figures stay as they are.
  console.error(`${path.relative(process.cwd(), source)} names no test file with its project: nothing recorded`);
  process.exit(1);
}
const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(recordedFilesPath, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(
  `${path.relative(process.cwd(), recordedFilesPath)}: ${Object.keys(sorted).length} files from ${path.relative(process.cwd(), source)}`,
);
