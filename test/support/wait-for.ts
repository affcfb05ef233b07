// Polling helpers of the integration tests: wait until something is there, or give up saying what.

/**
 * Resolves with the first value `probe` gives that is not undefined; throws `what` (and `explain()`) after timeoutMs.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  explain: () => string = () => '',
  intervalMs = 150,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Reads until `done` holds for what was read; throws with the last value after timeoutMs. */
export async function waitUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  let last: T | undefined;
  return waitFor(
    'the condition',
    async () => {
      last = await read();
      return done(last) ? last : undefined;
    },
    timeoutMs,
    () => `last value ${JSON.stringify(last)}`,
    intervalMs,
  );
}
