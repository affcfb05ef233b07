// sharedRead (lib/shared-read.ts): one read serves the shared callers while it is under way and for freshMs after it,
// for its key alone; a failed read is not kept; a fresh caller reads anew, and its answer serves the shared ones.
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
    const during = [read.shared('d1'), read.shared('d1'), read.shared('d1')];
    release(7);
    expect(await Promise.all(during)).toEqual([7, 7, 7]);
    clock = 99;
    expect(await read.shared('d1')).toBe(7);
    expect(reads).toEqual(['d1']);
    clock = 100;
    const after = read.shared('d1');
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
    const failed = await Promise.allSettled([read.shared('d1'), read.shared('d1')]);
    expect(failed.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
    expect(count).toBe(1);
    fail = false;
    expect(await read.shared('d1')).toBe('d1:2');
    expect(await read.shared('d2')).toBe('d2:3');
    expect(await read.shared('d2')).toBe('d2:3');
  });

  it('reads anew for a fresh caller though a read is kept or under way, and keeps the answer of the read begun last', async () => {
    const releases: Array<(value: number) => void> = [];
    const read = sharedRead(() => new Promise<number>((resolve) => releases.push(resolve)), {
      freshMs: 60_000,
      now: () => 0,
    });
    const first = read.shared('d1');
    const fresh = read.fresh('d1');
    // A fresh caller never joins the read under way: it may have begun before what the caller must see was written.
    expect(releases).toHaveLength(2);
    releases[1]!(2);
    expect(await fresh).toBe(2);
    releases[0]!(1);
    expect(await first).toBe(1);
    // The older read ended last; the newer answer is the one kept.
    expect(await read.shared('d1')).toBe(2);
    const again = read.fresh('d1');
    releases[2]!(3);
    expect(await again).toBe(3);
    expect(await read.shared('d1')).toBe(3);
    expect(releases).toHaveLength(3);
  });
});
