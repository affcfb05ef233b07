// The sandbox clock: real time plus an offset that the admin API advances, so testers can let
// codes and tokens expire without waiting. Every lifetime in the sandbox is measured on it.

export interface SandboxClock {
  /** Milliseconds since the epoch, sandbox time. */
  now(): number;
  /** Moves sandbox time forward; it never goes back except through reset. */
  advance(seconds: number): void;
  reset(): void;
}

export function createSandboxClock(): SandboxClock {
  let offsetMs = 0;
  return {
    now: () => Date.now() + offsetMs,
    advance: (seconds) => {
      offsetMs += Math.round(seconds * 1000);
    },
    reset: () => {
      offsetMs = 0;
    },
  };
}

/** Seconds since the epoch, as JWT claims and the session payload write time. */
export function epochSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
