// An answer written at its client's pace: the one way the API writes a long-lived or large answer
// (a streamed CSV report, a console page's live region), so that what a slow or stopped client
// costs the API is bounded by design (architecture.md, invariant 16). The writer asks whether the
// response has room (its buffer below the socket's mark) and, when it has none, writes nothing more
// until the client took what is buffered ('drain'). A client that takes nothing for the stall bound
// once the buffer is full (a frozen tab, a suspended laptop, a stuck proxy) is cut off: the
// connection is destroyed, and with it everything the response held. A client that goes away stops
// the answer at once, as does one gone before the answer began. The writer learns either through `stopped`.
import type { Response } from 'express';

/** Why an answer stopped before its end: its client went away, or took nothing for the stall bound. */
export type PaceStop = 'disconnected' | 'stalled';

export interface PacedResponse {
  /** Aborted once the answer stopped before its end (the connection is then gone: nothing more is written). */
  readonly stopped: AbortSignal;
  /** Why it stopped; null while it goes on, and once it ended whole. */
  stoppedBy(): PaceStop | null;
  /** True while a write goes out without waiting: nothing waits to drain and the answer goes on. */
  hasRoom(): boolean;
  /**
   * Writes `chunk`; answers hasRoom() after it. A write that fills the buffer starts the stall clock,
   * which the next 'drain' stops. A writer that must not queue writes only while hasRoom().
   */
  write(chunk: string): boolean;
  /** Resolves 'drained' once there is room again (at once if there is); else why the answer stopped. */
  room(): Promise<'drained' | PaceStop>;
  /**
   * Ends the answer with `last`: 'completed' once the socket took all of it, else why it stopped
   * (a client that takes nothing of the rest for the stall bound is cut off, as any other).
   */
  end(last?: string): Promise<'completed' | PaceStop>;
  /** Breaks the answer off (the connection destroyed): a failure half-way must not look like a whole answer. */
  destroy(): void;
  /** Lets go of the response, nothing written: another answer (an error's) is given in its place. */
  release(): void;
  /** The bytes the response holds that the socket has not taken yet. */
  buffered(): number;
}

export function paceResponse(res: Response, options: { stallMs: number }): PacedResponse {
  const stop = new AbortController();
  let why: PaceStop | null = null;
  let stall: NodeJS.Timeout | undefined;

  const calm = () => {
    clearTimeout(stall);
    stall = undefined;
  };
  const halt = (reason: PaceStop) => {
    if (why !== null || res.writableFinished) return;
    why = reason;
    calm();
    res.off('drain', calm);
    res.off('close', onClose);
    // Destroyed, the connection lets go of everything the response held (its buffer, the socket).
    res.destroy();
    stop.abort();
  };
  // The stall clock: runs while the buffer is full, from the write that filled it to the next 'drain'.
  const watch = () => {
    stall ??= setTimeout(() => halt('stalled'), options.stallMs);
  };
  const onClose = () => {
    calm();
    res.off('drain', calm);
    if (!res.writableFinished) halt('disconnected');
  };
  res.on('drain', calm);
  res.on('close', onClose);
  // A client may have gone before the answer began (while its route read the database): its 'close' is past, and a
  // destroyed response takes every write without pushing back, so the writer must learn it here or never.
  if (res.destroyed) halt('disconnected');

  const release = () => {
    calm();
    res.off('drain', calm);
    res.off('close', onClose);
  };

  const hasRoom = () => why === null && !res.destroyed && !res.writableEnded && !res.writableNeedDrain;

  /** Resolves once `event` is emitted by the response, or the answer stopped first. */
  const until = (event: 'drain' | 'finish'): Promise<boolean> =>
    new Promise((resolve) => {
      const done = (happened: boolean) => {
        res.off(event, onEvent);
        stop.signal.removeEventListener('abort', onStop);
        resolve(happened);
      };
      const onEvent = () => done(true);
      const onStop = () => done(false);
      res.on(event, onEvent);
      stop.signal.addEventListener('abort', onStop, { once: true });
    });

  return {
    stopped: stop.signal,
    stoppedBy: () => why,
    hasRoom,
    write(chunk) {
      if (why !== null) return false;
      if (!res.write(chunk)) watch();
      return hasRoom();
    },
    async room() {
      if (why === null && res.destroyed) halt('disconnected');
      if (why !== null) return why;
      if (!res.writableNeedDrain) return 'drained';
      return (await until('drain')) ? 'drained' : (why ?? 'disconnected');
    },
    async end(last) {
      if (why !== null) return why;
      const finished = until('finish');
      res.end(last);
      if (res.writableFinished) {
        calm();
        return 'completed';
      }
      // What is left must be taken within the stall bound too ('drain' is not emitted after the end).
      watch();
      res.off('drain', calm);
      const whole = await finished;
      calm();
      return whole ? 'completed' : (why ?? 'disconnected');
    },
    destroy() {
      release();
      res.destroy();
    },
    release,
    buffered: () => res.writableLength,
  };
}
