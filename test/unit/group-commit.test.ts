// lib/group-commit.ts: one request alone is written at once; requests that arrive while a write is
// under way are written together by the next, at most maxGroup at a time, each answered its own
// result; a group that fails refuses each of its requests with the error, and the group queued
// behind it is still written; past maxWaiting a request is refused at once, and one that waited
// maxWaitMs for its group is refused and never written.
import { describe, expect, it, vi } from 'vitest';
import { createGroupCommit, type GroupCommitOptions } from '../../lib/group-commit.ts';

const options = (over: Partial<GroupCommitOptions> = {}): GroupCommitOptions => ({
  maxGroup: 4,
  maxWaiting: 100,
  maxWaitMs: 60_000,
  refuse: (why) => new Error(`refused: ${why}`),
  ...over,
});

/** A write whose groups are recorded and which finishes when the test says. */
function recordedWrite() {
  const groups: number[][] = [];
  const pending: Array<() => void> = [];
  let failNext: Error | null = null;
  const write = async (items: readonly number[]) => {
    groups.push([...items]);
    await new Promise<void>((resolve) => pending.push(resolve));
    if (failNext) {
      const error = failNext;
      failNext = null;
      throw error;
    }
    return items.map((item) => item * 10);
  };
  const finishOne = async () => {
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    pending.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { groups, write, finishOne, failWith: (error: Error) => (failNext = error) };
}

describe('group commit', () => {
  it('writes one request alone at once, without waiting for others', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, options());
    const answer = commit.submit(7);
    expect(recorded.groups).toEqual([[7]]);
    await recorded.finishOne();
    await expect(answer).resolves.toBe(70);
  });

  it('writes what arrived during a write together, at most maxGroup at a time, each answered its own result', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, options());
    const answers = Array.from({ length: 10 }, (_, index) => commit.submit(index));
    for (let group = 0; group < 4; group += 1) await recorded.finishOne();
    expect(await Promise.all(answers)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(recorded.groups).toEqual([[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]]);
  });

  it('refuses every request of a failed group with its error, and writes the group queued behind it and the next', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, options({ maxGroup: 3 }));
    const first = commit.submit(1);
    // Each answer read as it settles (a refusal nobody awaits yet is not left unhandled).
    const answers = [2, 3, 4, 5].map((item) => commit.submit(item).then(String, (error: Error) => error.message));
    await recorded.finishOne();
    recorded.failWith(new Error('refused'));
    expect(recorded.groups).toEqual([[1], [2, 3, 4]]);
    await recorded.finishOne();
    await recorded.finishOne();
    expect(recorded.groups).toEqual([[1], [2, 3, 4], [5]]);
    await expect(first).resolves.toBe(10);
    expect(await Promise.all(answers)).toEqual(['refused', 'refused', 'refused', '50']);
    // The next request after a failed group starts a new write.
    const next = commit.submit(5);
    await recorded.finishOne();
    await expect(next).resolves.toBe(50);
  });

  it('refuses a write that answers a result count other than its group', async () => {
    const commit = createGroupCommit(async () => [1, 2], options());
    await expect(commit.submit(1)).rejects.toThrow('2 results for 1 items');
  });

  it('refuses a group size or a queue below 1', () => {
    const write = async (items: readonly number[]) => items;
    expect(() => createGroupCommit(write, options({ maxGroup: 0 }))).toThrow(RangeError);
    expect(() => createGroupCommit(write, options({ maxWaiting: 0 }))).toThrow(RangeError);
  });

  it('refuses a request at once when maxWaiting wait already, and writes the others', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, options({ maxWaiting: 2 }));
    const answers = [1, 2, 3, 4].map((item) => commit.submit(item).then(String, (error: Error) => error.message));
    // 1 is being written; 2 and 3 wait; 4 finds the queue full.
    expect(commit.waiting()).toBe(2);
    expect(await answers[3]).toBe('refused: 2 requests already wait to be stored');
    await recorded.finishOne();
    await recorded.finishOne();
    expect(await Promise.all(answers.slice(0, 3))).toEqual(['10', '20', '30']);
    expect(recorded.groups).toEqual([[1], [2, 3]]);
  });

  it('refuses a request that waited maxWaitMs for its group, and never writes it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const recorded = recordedWrite();
      const commit = createGroupCommit(recorded.write, options({ maxWaitMs: 5000 }));
      const first = commit.submit(1);
      const late = commit.submit(2).then(String, (error: Error) => error.message);
      vi.advanceTimersByTime(4999);
      expect(commit.waiting()).toBe(1);
      vi.advanceTimersByTime(1);
      expect(await late).toBe('refused: waited 5000 ms to be stored');
      expect(commit.waiting()).toBe(0);
      await recorded.finishOne();
      await expect(first).resolves.toBe(10);
      expect(recorded.groups).toEqual([[1]]);
    } finally {
      vi.useRealTimers();
    }
  });
});
