// The order test files start in. Four files run at once on two cores (vitest.config.ts), so a file's wall time
// depends on what runs beside it: four files that each keep a core busy (the soak, `walletflow dev`, the bench, the
// upgrade) started together ran at two to three times their time alone, each past a minute. So the longest start
// first, as vitest itself would order them, but no more than two CPU-heavy files at once where the recorded figures can
// arrange it: the other places go to files that mostly wait (on Temporal's timers, a late effect, a paused worker). The
// unit files follow the suite's as a block, so that each worker process runs one project's files one after another.
//
// The figures are test/file-durations.json's (`npm run test:durations` records a run's, from the per-file CPU that
// test/cpu-per-file.ts writes down): per project and file, its wall seconds and its CPU seconds in a full run. A file
// not recorded there takes vitest's own duration from its last run on this machine, if any, and counts as light.
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { planGroupOrder, recordKey, recordedFilesPath, type Candidate, type RecordedFile } from './start-plan.ts';

export default class StartOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const recorded = JSON.parse(readFileSync(recordedFilesPath, 'utf8')) as Record<string, RecordedFile>;
    const slots = Math.max(1, Number(this.ctx.config.maxWorkers) || 1);
    const groups = new Map<number, Array<Candidate<TestSpecification>>>();
    for (const spec of files) {
      const figures = recorded[recordKey(spec.project.name, spec.moduleId)];
      const lastRun = this.ctx.cache.getTestSpecificationResult(spec)?.duration;
      const candidate = {
        item: spec,
        seconds: figures?.seconds ?? (lastRun ? lastRun / 1000 : 0),
        cpuSeconds: figures?.cpuSeconds ?? 0,
        ...(spec.project.config.isolate ? {} : { sharedBy: spec.project.name }),
      };
      const group = spec.project.config.sequence.groupOrder;
      groups.set(group, [...(groups.get(group) ?? []), candidate]);
    }
    return [...groups.entries()]
      .sort(([a], [b]) => a - b)
      .flatMap(([, candidates]) => planGroupOrder(candidates, slots));
  }
}
