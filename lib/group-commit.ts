// Group commit: requests that arrive while a write is under way are written together by the next
// one, in one transaction. One request alone is written at once (no timer, no added wait); many at
// once take a shared row's lock once per group instead of once each (docs/fundings.md, Accepted
// together). One group is written at a time; a group holds at most `maxGroup` requests. The wait
// is bounded as the admission gate bounds it (lib/admission.ts): at most `maxWaiting` requests wait,
// each at most `maxWaitMs` for its group to start; past either, `refuse` answers it (nothing of it
// was written).

export interface GroupCommit<I, O> {
  /** Writes `item` with the others waiting now; its own result, or the group's error, or the refusal. */
  submit(item: I): Promise<O>;
  /** Waiting for a group now (for tests and metrics). */
  waiting(): number;
}

export interface GroupCommitOptions {
  maxGroup: number;
  /** Requests that may wait for a group; the next one is refused at once. */
  maxWaiting: number;
  /** The longest a request waits for its group to start before it is refused. */
  maxWaitMs: number;
  /** The error a refused request gets (why: full, or waited too long). */
  refuse: (why: string) => Error;
}

/**
 * `write` takes a group and answers one result per item, in order, or throws: every item of the
 * group is then refused with that error (its caller decides what to do with it alone).
 */
export function createGroupCommit<I, O>(
  write: (items: readonly I[]) => Promise<readonly O[]>,
  options: GroupCommitOptions,
): GroupCommit<I, O> {
  for (const [name, value] of Object.entries({ maxGroup: options.maxGroup, maxWaiting: options.maxWaiting }))
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be at least 1`);
  interface Waiter {
    item: I;
    resolve: (value: O) => void;
    reject: (error: unknown) => void;
    timer: NodeJS.Timeout | undefined;
  }
  const queue: Waiter[] = [];
  let writing = false;

  const writeNext = async (): Promise<void> => {
    writing = true;
    while (queue.length > 0) {
      const group = queue.splice(0, options.maxGroup);
      for (const entry of group) clearTimeout(entry.timer);
      try {
        const results = await write(group.map((entry) => entry.item));
        if (results.length !== group.length)
          throw new Error(`group commit: ${results.length} results for ${group.length} items`);
        group.forEach((entry, index) => entry.resolve(results[index]!));
      } catch (error) {
        for (const entry of group) entry.reject(error);
      }
    }
    writing = false;
  };

  return {
    submit(item: I): Promise<O> {
      if (queue.length >= options.maxWaiting)
        return Promise.reject(options.refuse(`${queue.length} requests already wait to be stored`));
      return new Promise<O>((resolve, reject) => {
        const entry: Waiter = { item, resolve, reject, timer: undefined };
        queue.push(entry);
        if (!writing) {
          void writeNext();
          return;
        }
        entry.timer = setTimeout(() => {
          const index = queue.indexOf(entry);
          if (index < 0) return;
          queue.splice(index, 1);
          reject(options.refuse(`waited ${options.maxWaitMs} ms to be stored`));
        }, options.maxWaitMs);
      });
    },
    waiting: () => queue.length,
  };
}
