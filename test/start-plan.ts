// The plan behind the test files' start order (test/start-order.ts, vitest's sequencer), apart from vitest so that
// test/record-durations.ts can share its names: the recorded figures, where they are kept, and the plan.
import path from 'node:path';

/** A file's figures in a full run: wall seconds, and CPU seconds of its process and the children it waited for. */
export interface RecordedFile {
  seconds: number;
  cpuSeconds: number;
}

/**
 * A heavy file: one that used at least this share of the CPU of all the files planned with it (its group's, the unit
 * block aside: planGroupOrder): the soak, `walletflow dev`, the upgrade, the bench, the console's pages, 4 to 10 %
 * each in the recorded runs; the next ones, 3 % at most. A share, so that figures recorded on a faster or a slower
 * machine pick the same files. At most `heavyAtOnce` run at once.
 */
export const heavyCpuShare = 0.04;
export const heavyAtOnce = 2;

const root = path.resolve(import.meta.dirname, '..');
export const recordedFilesPath = path.join(import.meta.dirname, 'file-durations.json');

/** The key of a file's figures: its project and its path from the project root ("suite:test/fault/soak.test.ts"). */
export function recordKey(project: string, file: string): string {
  return `${project}:${path.relative(root, path.resolve(root, file))}`;
}

export interface Candidate<T> {
  item: T;
  /** Its wall seconds in the recorded run. */
  seconds: number;
  /** Its CPU seconds in the recorded run (0: not known). */
  cpuSeconds: number;
  /**
   * The name of the worker processes it runs in one after another with others (its vitest project, where the project
   * does not isolate its files); absent: a process of its own.
   */
  sharedBy?: string;
}

/**
 * The start order of one group of files run `slots` at a time: a run simulated with the recorded seconds, where each
 * slot that frees takes the longest file left, unless `limit` heavy files already run: then the longest light one (a
 * heavy one only when none is left). Longest first otherwise, so the long files do not end the run.
 */
export function planStartOrder<T>(files: Array<Candidate<T>>, slots: number, limit = heavyAtOnce): T[] {
  const threshold = heavyCpuShare * files.reduce((sum, file) => sum + file.cpuSeconds, 0);
  const left = [...files]
    .map((file) => ({ ...file, heavy: file.cpuSeconds > 0 && file.cpuSeconds >= threshold }))
    .sort((a, b) => b.seconds - a.seconds);
  const running: Array<{ end: number; heavy: boolean }> = [];
  const order: T[] = [];
  let now = 0;
  while (left.length > 0) {
    if (running.length >= slots) {
      running.sort((a, b) => a.end - b.end);
      now = running.shift()!.end;
    }
    const heavyRunning = running.filter((file) => file.heavy).length;
    let index = heavyRunning < limit ? 0 : left.findIndex((file) => !file.heavy);
    if (index === -1) index = 0;
    const [next] = left.splice(index, 1);
    running.push({ end: now + next!.seconds, heavy: next!.heavy });
    order.push(next!.item);
  }
  return order;
}

/**
 * The start order of a group of files run at once: the files of its main shared worker processes (the project with the
 * most recorded seconds, the suite's) and those that run in a process of their own, by planStartOrder; then each
 * other project that shares its processes (the unit files'), as a block, its longest first. Vitest hands a freed
 * process the next file only if it is of the same project, and otherwise starts one again (Prisma's client, Temporal's
 * native bridge, Express loaded anew): unit files scattered among the suite's made about a dozen such starts.
 */
export function planGroupOrder<T>(files: Array<Candidate<T>>, slots: number): T[] {
  const totals = new Map<string, number>();
  for (const file of files) {
    if (file.sharedBy !== undefined) totals.set(file.sharedBy, (totals.get(file.sharedBy) ?? 0) + file.seconds);
  }
  const [main] = [...totals.entries()].sort(([, a], [, b]) => b - a)[0] ?? [];
  const planned = files.filter((file) => file.sharedBy === undefined || file.sharedBy === main);
  const blocks = [...totals.entries()]
    .filter(([name]) => name !== main)
    .sort(([, a], [, b]) => b - a)
    .flatMap(([name]) => files.filter((file) => file.sharedBy === name).sort((a, b) => b.seconds - a.seconds));
  return [...planStartOrder(planned, slots), ...blocks.map((file) => file.item)];
}
