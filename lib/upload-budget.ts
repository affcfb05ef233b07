// The memory the API's batch uploads may hold at once, across requests (docs/security.md, upload
// limits). A batch upload is read as it arrives and kept in a compact form (fundings/batch-upload.ts),
// but a few uploads of 100,000 items at once still add up: each takes its share of this budget as it
// reads (the chunk it is reading, the item, member or line not yet complete, and a fixed share per
// item it read) and gives it back when its request ends. An upload the budget cannot take is refused at once (503
// OVERLOADED with Retry-After,
// nothing stored), not left to grow the process until it runs out of memory.

export interface UploadBudget {
  /** A share of the budget for one upload, empty at first. */
  open(): UploadShare;
  /** Bytes held by every open share now (for metrics and tests). */
  used(): number;
  readonly totalBytes: number;
}

export interface UploadShare {
  /** Takes `bytes` more; false (and nothing taken) when the budget cannot give them. */
  take(bytes: number): boolean;
  /** Gives back `bytes` of what this share took (a chunk read and no longer held). */
  give(bytes: number): void;
  /** Gives back everything this share took (once; later calls do nothing). */
  close(): void;
}

export function createUploadBudget(totalBytes: number): UploadBudget {
  let used = 0;
  return {
    totalBytes,
    used: () => used,
    open() {
      let held = 0;
      let closed = false;
      return {
        take(bytes) {
          if (closed || used + bytes > totalBytes) return false;
          used += bytes;
          held += bytes;
          return true;
        },
        give(bytes) {
          const given = Math.min(bytes, held);
          used -= given;
          held -= given;
        },
        close() {
          if (closed) return;
          closed = true;
          used -= held;
          held = 0;
        },
      };
    },
  };
}
