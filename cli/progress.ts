// How `walletflow fund` shows a funding as it moves: on a terminal one spinner line for the current
// step, redrawn in place, and a ✔ line per finished step; elsewhere one plain line per new event.
// And how a long count goes (`walletflow settlement-report` following a day's run): a bar redrawn
// in place on a terminal, elsewhere a line every 10% (and at least every 30 s).
import { isFinalFundingStatus, type FundingView } from '../domain/funding.ts';

type FundingEvent = FundingView['events'][number];

export interface FundingProgressOptions {
  /** Redraw in place with ANSI (a terminal); else plain lines only. */
  tty: boolean;
  /** Colour the symbols and statuses (a terminal without NO_COLOR). */
  color: boolean;
  write(text: string): void;
  /** Terminal width, so the live line never wraps (a wrapped line cannot be redrawn in place). */
  columns?: () => number | undefined;
  now?: () => number;
}

export interface FundingProgress {
  /** Shows what changed since the last call: new events, the current step. */
  update(funding: FundingView): void;
  /** Advances the spinner and the current step's clock (a terminal only). */
  tick(): void;
  /** Removes the live line, leaving the finished steps. */
  close(): void;
}

const spinnerFrames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const ansi = {
  clearLine: '\r\x1b[2K',
  green: '\x1b[32m',
  red: '\x1b[31m',
  cyan: '\x1b[36m',
  dim: '\x1b[2m',
  reset: '\x1b[0m',
};

export function formatDuration(ms: number): string {
  const clamped = Math.max(0, ms);
  if (clamped < 60_000) return `${(clamped / 1000).toFixed(1)}s`;
  const seconds = Math.floor(clamped / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}

const eventText = (event: FundingEvent) =>
  [event.detail ?? '', event.requestReferenceNo ? `(ref ${event.requestReferenceNo})` : '']
    .filter((part) => part !== '')
    .join('  ');

/** One plain line per timeline event: time, status, detail and the Request-Reference-No. */
export function plainEventLine(event: FundingEvent): string {
  return `${event.at}  ${event.status.padEnd(11)}  ${eventText(event)}`.trimEnd();
}

function paint(color: boolean, code: string, text: string): string {
  return color ? `${code}${text}${ansi.reset}` : text;
}

/** The last line of a followed funding: id, status, transfer and the error if any. */
export function summaryLine(funding: FundingView, color = false): string {
  const approved = funding.status === 'APPROVED';
  const final = isFinalFundingStatus(funding.status);
  const status = paint(color, approved ? ansi.green : final ? ansi.red : ansi.cyan, funding.status);
  const parts = [`funding ${funding.fundingId}`, status, `transfer ${funding.transferId ?? '-'}`];
  if (funding.error) parts.push(`error ${funding.error.code}: ${funding.error.message}`);
  return parts.join('  ');
}

function truncate(text: string, width: number | undefined): string {
  if (!width || width < 20 || [...text].length <= width) return text;
  return `${[...text].slice(0, width - 1).join('')}…`;
}

export function createFundingProgress(options: FundingProgressOptions): FundingProgress {
  const now = options.now ?? Date.now;
  const { color } = options;
  /** Events already written as permanent lines. */
  let shown = 0;
  let live: FundingEvent | undefined;
  let liveDrawn = false;
  let frame = 0;

  const stepLine = (symbol: string, event: FundingEvent, duration: string) =>
    `${symbol} ${event.status.padEnd(11)} ${duration.padStart(6)}  ${eventText(event)}`.trimEnd();

  const clearLive = () => {
    if (liveDrawn) options.write(ansi.clearLine);
    liveDrawn = false;
  };
  const drawLive = () => {
    if (!live) return;
    const elapsed = formatDuration(now() - Date.parse(live.at));
    const width = options.columns?.();
    const text = truncate(stepLine(' ', live, elapsed), width === undefined ? undefined : width - 1).slice(2);
    const symbol = paint(color, ansi.cyan, spinnerFrames[frame % spinnerFrames.length] ?? '-');
    options.write(`${ansi.clearLine}${symbol} ${text}`);
    liveDrawn = true;
  };

  return {
    update(funding) {
      const events = funding.events;
      if (!options.tty) {
        for (const event of events.slice(shown)) options.write(`${plainEventLine(event)}\n`);
        shown = Math.max(shown, events.length);
        return;
      }
      const last = events[events.length - 1];
      // Every event but the current step is finished; a final event is finished as it appears.
      const finished = last && isFinalFundingStatus(last.status) ? events.length : Math.max(events.length - 1, 0);
      if (finished > shown) {
        clearLive();
        for (let index = shown; index < finished; index += 1) {
          const event = events[index]!;
          const next = events[index + 1];
          const failed = isFinalFundingStatus(event.status) && event.status !== 'APPROVED';
          const symbol = failed ? paint(color, ansi.red, '✖') : paint(color, ansi.green, '✔');
          const duration = next ? formatDuration(Date.parse(next.at) - Date.parse(event.at)) : '';
          options.write(`${stepLine(symbol, event, duration)}\n`);
        }
        shown = finished;
      }
      live = finished < events.length ? events[finished] : undefined;
      if (live) drawLive();
      else clearLive();
    },
    tick() {
      if (!options.tty || !live) return;
      frame += 1;
      drawLive();
    },
    close() {
      clearLive();
      live = undefined;
    },
  };
}

export interface CountProgressOptions {
  /** Redraw in place with ANSI (a terminal); else plain lines now and then. */
  tty: boolean;
  write(text: string): void;
  /** What is counted, before the bar: `settling 2026-03-01`. */
  label: string;
  /** The bar's width in characters. */
  width?: number;
  now?: () => number;
}

export interface CountProgress {
  /** Shows `done` of `total`. */
  update(done: number, total: number): void;
  /** Shows a line of its own in place of the bar (a wait that has no count). */
  note(text: string): void;
  /** Ends the bar's line. */
  close(): void;
}

/** `[####--------] 1200/5000 (24%)`: the bar alone. */
export function countBar(done: number, total: number, width = 24): string {
  const share = total <= 0 ? 0 : Math.min(1, Math.max(0, done / total));
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} (${Math.floor(share * 100)}%)`;
}

export function createCountProgress(options: CountProgressOptions): CountProgress {
  const now = options.now ?? Date.now;
  let drawn = false;
  let lastTenth = -1;
  let lastLine = 0;
  const line = (text: string) => {
    if (options.tty) {
      options.write(`${ansi.clearLine}${text}`);
      drawn = true;
      return;
    }
    options.write(`${text}\n`);
    lastLine = now();
  };
  return {
    update(done, total) {
      const tenth = total <= 0 ? 0 : Math.floor((done / total) * 10);
      if (!options.tty && tenth === lastTenth && now() - lastLine < 30_000) return;
      lastTenth = tenth;
      line(`${options.label} ${countBar(done, total, options.width)}`);
    },
    note(text) {
      if (!options.tty && now() - lastLine < 30_000 && lastLine !== 0) return;
      line(`${options.label}: ${text}`);
    },
    close() {
      if (drawn) options.write('\n');
      drawn = false;
    },
  };
}
