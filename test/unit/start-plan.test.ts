import { describe, expect, it } from 'vitest';
import { planGroupOrder, planStartOrder, recordKey, type Candidate } from '../start-plan.ts';

// A heavy file here uses 100 CPU seconds, a light one 1: each heavy one well above 4 % of them all.
const file = (item: string, seconds: number, heavy = false): Candidate<string> => ({
  item,
  seconds,
  cpuSeconds: heavy ? 100 : 1,
});

describe('the start order of the test files', () => {
  it('starts the longest first when no file is heavy', () => {
    const files = [file('a', 5), file('b', 50), file('c', 20), file('d', 1)];
    expect(planStartOrder(files, 2)).toEqual(['b', 'c', 'a', 'd']);
  });

  it('runs at most two heavy files at once while light ones are left', () => {
    const files = [
      file('soak', 100, true),
      file('dev', 90, true),
      file('bench', 80, true),
      file('pages', 70, true),
      file('wait-a', 40),
      file('wait-b', 35),
      file('wait-c', 30),
      file('wait-d', 30),
      file('short', 5),
    ];
    // soak and dev fill the heavy places; the light ones take each slot that frees (wait-b's at 35 s, wait-a's at 40,
    // wait-c's at 65); once none is left, the other heavy files start where slots free.
    expect(planStartOrder(files, 4)).toEqual([
      'soak',
      'dev',
      'wait-a',
      'wait-b',
      'wait-c',
      'wait-d',
      'short',
      'bench',
      'pages',
    ]);
  });

  it('counts as heavy a file with at least 4 % of the group’s CPU, and a file of unknown CPU as light', () => {
    const files = [
      { item: 'a', seconds: 50, cpuSeconds: 40 },
      { item: 'b', seconds: 45, cpuSeconds: 40 },
      { item: 'c', seconds: 40, cpuSeconds: 40 },
      { item: 'unknown', seconds: 30, cpuSeconds: 0 },
      ...Array.from({ length: 40 }, (_, index) => ({ item: `light-${index}`, seconds: 1, cpuSeconds: 2 })),
    ];
    // 200 CPU s in all: a, b and c (20 % each) are heavy, the 2-second files (1 %) are not.
    expect(planStartOrder(files, 4).slice(0, 4)).toEqual(['a', 'b', 'unknown', 'light-0']);
  });

  it('starts a heavy file beside others when only heavy ones are left', () => {
    const files = [file('soak', 100, true), file('dev', 90, true), file('bench', 80, true)];
    expect(planStartOrder(files, 4)).toEqual(['soak', 'dev', 'bench']);
  });

  it('runs the files of a second project that shares its processes as a block after the main one', () => {
    const shared = (item: string, seconds: number, sharedBy: string) => ({ item, seconds, cpuSeconds: 1, sharedBy });
    const files = [
      shared('unit-a', 3, 'unit'),
      shared('suite-a', 40, 'suite'),
      { item: 'lanes-a', seconds: 20, cpuSeconds: 1 },
      shared('suite-b', 2, 'suite'),
      shared('unit-b', 6, 'unit'),
      shared('suite-c', 1, 'suite'),
    ];
    expect(planGroupOrder(files, 4)).toEqual(['suite-a', 'lanes-a', 'suite-b', 'suite-c', 'unit-b', 'unit-a']);
  });

  it('keys a file by its project and its path from the project root', () => {
    expect(recordKey('lanes', 'test/integration/fundings.test.ts')).toBe('lanes:test/integration/fundings.test.ts');
    expect(recordKey('suite', `${process.cwd()}/test/fault/soak.test.ts`)).toBe('suite:test/fault/soak.test.ts');
  });
});
