// One read serving every caller for a while: the console's home figures, which each open home page's live region asks
// for every few seconds (api/console/home-page.ts). Shared callers within `freshMs` of the last read's end get its
// answer; shared callers while a read is under way share it; a read that failed is not kept (its callers get the
// failure, the next caller reads again). A caller that must see every write made before it asked (a page being
// loaded) reads afresh, and its answer then serves the shared callers. Keyed: an answer serves only callers of its key
// (the day the figures are of), the newest key's alone kept.

export interface SharedReadOptions {
  /** How long a read's answer serves the shared callers after it, from when it ended. */
  freshMs: number;
  now?: () => number;
}

export interface SharedRead<T> {
  /** The kept answer while fresh, else the read under way, else a new read: for callers polling at a pace. */
  shared(key: string): Promise<T>;
  /** A read begun by this call, never an earlier one's answer: for a caller that must see what was written before. */
  fresh(key: string): Promise<T>;
}

/** Reads for `key` at most once per `freshMs` for its shared callers, however many call meanwhile. */
export function sharedRead<T>(read: (key: string) => Promise<T>, options: SharedReadOptions): SharedRead<T> {
  const now = options.now ?? Date.now;
  /** Reads in the order they began: an answer is kept only over an older read's, whichever ends last. */
  let begun = 0;
  let kept: { key: string; order: number; at: number; value: T } | undefined;
  let underWay: { key: string; value: Promise<T> } | undefined;
  const readNow = (key: string): Promise<T> => {
    begun += 1;
    const order = begun;
    return read(key).then((value) => {
      if (!kept || kept.key !== key || kept.order < order) kept = { key, order, at: now(), value };
      return value;
    });
  };
  return {
    shared(key) {
      if (kept && kept.key === key && now() - kept.at < options.freshMs) return Promise.resolve(kept.value);
      if (underWay && underWay.key === key) return underWay.value;
      const current = {
        key,
        value: readNow(key).finally(() => {
          if (underWay === current) underWay = undefined;
        }),
      };
      underWay = current;
      return current.value;
    },
    fresh: readNow,
  };
}
