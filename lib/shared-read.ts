// One read serving every caller for a while: the console's home figures, which each open home page asks for every few
// seconds (api/console/home-page.ts). Callers within `freshMs` of the last read's end get its answer; callers while a
// read is under way share it; a read that failed is not kept (its callers get the failure, the next caller reads
// again). Keyed: an answer serves only callers of its key (the day the figures are of), the newest key's alone kept.

export interface SharedReadOptions {
  /** How long a read's answer serves the callers after it, from when it ended. */
  freshMs: number;
  now?: () => number;
}

/** A function that reads for `key` at most once per `freshMs`, however many call it meanwhile. */
export function sharedRead<T>(
  read: (key: string) => Promise<T>,
  options: SharedReadOptions,
): (key: string) => Promise<T> {
  const now = options.now ?? Date.now;
  let kept: { key: string; at: number; value: T } | undefined;
  let underWay: { key: string; value: Promise<T> } | undefined;
  return (key) => {
    if (kept && kept.key === key && now() - kept.at < options.freshMs) return Promise.resolve(kept.value);
    if (underWay && underWay.key === key) return underWay.value;
    const current = {
      key,
      value: read(key)
        .then((value) => {
          kept = { key, at: now(), value };
          return value;
        })
        .finally(() => {
          if (underWay === current) underWay = undefined;
        }),
    };
    underWay = current;
    return current.value;
  };
}
