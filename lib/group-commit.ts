// Group commit: requests that arrive while a write is under way are written together by the next
// one, in one transaction. One request alone is written at once (no timer, no added wait); many at
// once take a shared row's lock once per group instead of once each (docs/fundings.md, Accepted
// together). One group is written at a time; a group holds at most `maxGroup` requests.

export interface GroupCommit<I, O> {
  /** Writes `item` with the others waiting now; its own result, or the group's error. */
  submit(item: I): Promise<O>;
}

/**
 * `write` takes a group and answers one result per item, in order, or throws: every item of the
 * group is then refused with that error (its caller decides what to do with it alone).
 */
export function createGroupCommit<I, O>(
  write: (items: readonly I[]) => Promise<readonly O[]>,
  options: { maxGroup: number },
): GroupCommit<I, O> {
  if (!Number.isInteger(options.maxGroup) || options.maxGroup < 1) throw new RangeError('maxGroup must be at least 1');
  const waiting: Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }> = [];
  let writing = false;

  const writeNext = async (): Promise<void> => {
    writing = true;
    while (waiting.length > 0) {
      const group = waiting.splice(0, options.maxGroup);
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
      const result = new Promise<O>((resolve, reject) => waiting.push({ item, resolve, reject }));
      if (!writing) void writeNext();
      return result;
    },
  };
}
