// lib/group-commit.ts: one request alone is written at once; requests that arrive while a write is
// under way are written together by the next, at most maxGroup at a time, each answered its own
// result; a group that fails refuses each of its requests with the error, and the next group is
// still written.
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../lib/group-commit.ts';

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
    const commit = createGroupCommit(recorded.write, { maxGroup: 4 });
    const answer = commit.submit(7);
    expect(recorded.groups).toEqual([[7]]);
    await recorded.finishOne();
    await expect(answer).resolves.toBe(70);
  });

  it('writes what arrived during a write together, at most maxGroup at a time, each answered its own result', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, { maxGroup: 4 });
    const answers = Array.from({ length: 10 }, (_, index) => commit.submit(index));
    for (let group = 0; group < 4; group += 1) await recorded.finishOne();
    expect(await Promise.all(answers)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(recorded.groups).toEqual([[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]]);
  });

  it('refuses every request of a failed group with its error, and writes the next group', async () => {
    const recorded = recordedWrite();
    const commit = createGroupCommit(recorded.write, { maxGroup: 4 });
    const first = commit.submit(1);
    // Each answer read as it settles (a refusal nobody awaits yet is not left unhandled).
    const failed = [2, 3, 4].map((item) => commit.submit(item).then(String, (error: Error) => error.message));
    await recorded.finishOne();
    recorded.failWith(new Error('refused'));
    expect(recorded.groups).toEqual([[1], [2, 3, 4]]);
    await recorded.finishOne();
    await expect(first).resolves.toBe(10);
    expect(await Promise.all(failed)).toEqual(['refused', 'refused', 'refused']);
    // The next request after a failed group starts a new write.
    const next = commit.submit(5);
    await recorded.finishOne();
    await expect(next).resolves.toBe(50);
  });

  it('refuses a write that answers a result count other than its group', async () => {
    const commit = createGroupCommit(async () => [1, 2], { maxGroup: 4 });
    await expect(commit.submit(1)).rejects.toThrow('2 results for 1 items');
  });

  it('refuses a group size below 1', () => {
    expect(() => createGroupCommit(async (items: readonly number[]) => items, { maxGroup: 0 })).toThrow(RangeError);
  });
});
