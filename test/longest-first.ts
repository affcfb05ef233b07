// The order test files start in: the longest first, so that the soak and the bench (minutes of a
// stack each) start at once instead of wherever they fall. Vitest orders by the durations of the
// last run on this machine (its cache); a fresh clone has none and falls back to file sizes, which
// put a two-minute soak driven by a small file behind dozens of short ones. There the durations
// recorded in test/file-durations.json (`npm run test:durations` after a run) stand in.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const recorded = JSON.parse(readFileSync(path.join(import.meta.dirname, 'file-durations.json'), 'utf8')) as Record<
  string,
  number
>;
const root = path.resolve(import.meta.dirname, '..');

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // The cache decides where it knows every file; otherwise the recorded seconds do.
    if (files.every((spec) => this.ctx.cache.getTestSpecificationResult(spec))) return sorted;
    const seconds = (spec: TestSpecification) => recorded[path.relative(root, spec.moduleId)] ?? 0;
    const position = new Map(sorted.map((spec, index) => [spec, index]));
    return [...sorted].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        seconds(b) - seconds(a) ||
        position.get(a)! - position.get(b)!,
    );
  }
}
