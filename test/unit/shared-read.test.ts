// sharedRead (lib/shared-read.ts): one read serves the callers while it is under way and for freshMs after it, for
// its key alone; a failed read is not kept.
import { describe, expect, it } from 'vitest';
import { sharedRead } from '../../lib/shared-read.ts';

describe('a shared read', () => {
  it('serves the callers during a read and for its freshness after it with one read, then reads again', async () => {
    let clock = 0;
    const reads: string[] = [];
    let release: (value: number) => void = () => {};
    const read = sharedRead(
      (key) => {
        reads.push(key);
        return new Promise<number>((resolve) => (release = resolve));
      },
      { freshMs: 100, now: () => clock },
    );
    const during = [read('d1'), read('d1'), read('d1')];
    release(7);
    expect(await Promise.all(during)).toEqual([7, 7, 7]);
    clock = 99;
    expect(await read('d1')).toBe(7);
    expect(reads).toEqual(['d1']);
    clock = 100;
    const after = read('d1');
    release(8);
    expect(await after).toBe(8);
    expect(reads).toEqual(['d1', 'd1']);
  });

  it('reads for another key (the next day) at once, and keeps no failed read: every caller of it gets the failure', async () => {
    let fail = true;
    let count = 0;
    const read = sharedRead(
      async (key) => {
        count += 1;
        if (fail) throw new Error(`refused for ${key}`);
        return `${key}:${count}`;
      },
      { freshMs: 60_000, now: () => 0 },
    );
    const failed = await Promise.allSettled([read('d1'), read('d1')]);
    expect(failed.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
    expect(count).toBe(1);
    fail = false;
    expect(await read('d1')).toBe('d1:2');
    expect(await read('d2')).toBe('d2:3');
    expect(await read('d2')).toBe('d2:3');
  });
});
