/**
 * A one-line progress bar on stderr (bytes, rate, ETA), for a person at a
 * terminal: redrawn in place at most 10 times a second however often the SDK
 * reports, fitted to the terminal's width (the figures stay, a long file name
 * is cut in the middle), and cleared before results are printed. While
 * nothing is reported (a stall) it is redrawn every second (`tick`), so the
 * rate falls and the ETA grows instead of freezing, and after a few silent
 * seconds it says "stalled". Progress that goes back (a piece sent again
 * after a drop) restarts the rate rather than showing 0 B/s. When stderr is
 * not a terminal the CLI uses `silentProgress`, so logs and pipes get none
 * of it. The clock and the writer are injected so tests can drive it.
 */

export interface ProgressState {
  /** What is going on, e.g. "hashing video.mp4". */
  label: string;
  done: number;
  /** null when unknown: then no bar, percentage or ETA. */
  total: number | null;
  /** Extra text after the figures, e.g. "hashed 64%". */
  note?: string;
}

/** How fast it goes: over the last seconds, since the task began, and whether it is a stall. */
export interface Rate {
  /** Over the last RATE_WINDOW_MS (0 while waiting, e.g. for the server to take a piece). */
  bytesPerSecond: number;
  /** Since the task (the label) began: the ETA's rate while the recent one is 0. */
  average: number | null;
  /** Nothing reported for STALLED_AFTER_MS. */
  stalled: boolean;
}

export interface Progress {
  update(state: ProgressState): void;
  /** Removes the line, so what follows starts on a clean one. */
  clear(): void;
}

export const silentProgress: Progress = { update() {}, clear() {} };

export interface ProgressBarOptions {
  write(text: string): void;
  /** Width of the terminal in columns. */
  columns(): number;
  now?: () => number;
  /** Least time between redraws (default 100 ms). */
  intervalMs?: number;
}

const BAR_WIDTH = 16;
/** How far back the rate looks: long enough to be steady, short enough to follow changes. */
const RATE_WINDOW_MS = 3000;
/** Nothing reported for this long is a stall, said as such. */
const STALLED_AFTER_MS = 5000;

export class ProgressBar implements Progress {
  readonly #options: Required<ProgressBarOptions>;
  #lastDraw = -Infinity;
  #shown = false;
  #samples: { at: number; done: number; label: string }[] = [];
  /** The first report of the current label. */
  #start: { at: number; done: number; label: string } | null = null;
  #state: ProgressState | null = null;

  constructor(options: ProgressBarOptions) {
    this.#options = { now: () => performance.now(), intervalMs: 100, ...options };
  }

  update(state: ProgressState): void {
    const now = this.#options.now();
    const last = this.#samples.at(-1);
    // Another task, or progress that went back (bytes sent again): the rate starts over.
    if (last && (last.label !== state.label || state.done < last.done)) this.#samples = [];
    const sample = { at: now, done: state.done, label: state.label };
    if (this.#start?.label !== state.label) this.#start = sample;
    this.#samples.push(sample);
    this.#state = state;
    if (now - this.#lastDraw < this.#options.intervalMs) return;
    this.#draw(now);
  }

  /** Redraws the last state at the clock's time (the terminal's bar calls it every second). */
  tick(): void {
    if (this.#shown && this.#state) this.#draw(this.#options.now());
  }

  clear(): void {
    if (this.#shown) this.#options.write("\r\x1b[K");
    this.#shown = false;
    this.#lastDraw = -Infinity;
    this.#samples = [];
    this.#start = null;
    this.#state = null;
  }

  #draw(now: number): void {
    while (this.#samples.length > 2 && now - this.#samples[1].at > RATE_WINDOW_MS) {
      this.#samples.shift();
    }
    this.#lastDraw = now;
    this.#shown = true;
    this.#options.write(
      `\r${renderLine(this.#state!, this.#rate(now), this.#options.columns())}\x1b[K`,
    );
  }

  /** Bytes per second over the window up to now, or null before there is enough to tell. */
  #rate(now: number): Rate | null {
    const first = this.#samples[0];
    const last = this.#samples[this.#samples.length - 1];
    const ms = now - first.at;
    if (ms < 200) return null;
    const start = this.#start!;
    return {
      bytesPerSecond: ((last.done - first.done) * 1000) / ms,
      average: now - start.at < 200 ? null : ((last.done - start.done) * 1000) / (now - start.at),
      stalled: now - last.at >= STALLED_AFTER_MS,
    };
  }
}

/**
 * The line for a state, fitted to `columns` when given (one column is kept
 * free, so the cursor does not wrap). What goes first when it is too long:
 * the note, then the bar, then the middle of the label (a file name); the
 * figures (percentage, bytes, rate, ETA) stay while there is any room.
 */
export function renderLine(
  state: ProgressState,
  rate: Rate | number | null,
  columns = Infinity,
): string {
  const { bytesPerSecond, average, stalled } = typeof rate === "number"
    ? { bytesPerSecond: rate, average: null, stalled: false }
    : rate ?? { bytesPerSecond: null, average: null, stalled: false };
  const room = Math.max(10, columns - 1);
  const figures: string[] = [];
  let bar: string | null = null;
  if (state.total !== null && state.total > 0) {
    const fraction = Math.min(1, state.done / state.total);
    const filled = Math.round(fraction * BAR_WIDTH);
    bar = `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}]`;
    figures.push(`${Math.floor(fraction * 100)}%`.padStart(4));
    figures.push(`${formatBytes(state.done)}/${formatBytes(state.total)}`);
  } else {
    figures.push(formatBytes(state.done));
  }
  if (stalled) {
    figures.push("stalled");
  } else if (bytesPerSecond !== null) {
    // A pause (the server taking a piece) shows no rate rather than 0 B/s; the ETA goes on
    // from the average so far.
    if (bytesPerSecond > 0) figures.push(`${formatBytes(bytesPerSecond)}/s`);
    const etaRate = bytesPerSecond > 0 ? bytesPerSecond : average ?? 0;
    if (state.total !== null && etaRate > 0 && state.done < state.total) {
      figures.push(`ETA ${eta((state.total - state.done) / etaRate)}`);
    }
  }
  const join = (...parts: (string | null | undefined)[]) => parts.filter(Boolean).join(" ");
  for (
    const line of [
      join(state.label, bar, ...figures, state.note),
      join(state.label, bar, ...figures),
    ]
  ) {
    if (line.length <= room) return line;
  }
  const rest = join(...figures);
  const labelRoom = room - rest.length - 1;
  if (labelRoom >= 8) return join(shorten(state.label, labelRoom), rest);
  const line = join(state.label, rest);
  return line.length <= room ? line : line.slice(0, room - 1) + "…";
}

/** The text cut in the middle to `width` characters: "upload my-hol…final.mp4". */
function shorten(text: string, width: number): string {
  if (text.length <= width) return text;
  const head = Math.ceil((width - 1) / 2);
  return `${text.slice(0, head)}…${text.slice(text.length - (width - 1 - head))}`;
}

/** 512 B, 1.5 KiB, 100.0 MiB, 1.00 GiB. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  return `${value.toFixed(value < 10 && unit >= 3 ? 2 : 1)} ${units[unit]}`;
}

function eta(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The progress bar for this process: on stderr when it is a terminal, otherwise none. */
export function terminalProgress(): Progress {
  if (!Deno.stderr.isTerminal()) return silentProgress;
  const encoder = new TextEncoder();
  const bar = new ProgressBar({
    write: (text) => writeAllSync(Deno.stderr, encoder.encode(text)),
    columns: () => {
      try {
        return Deno.consoleSize().columns || 80; // 0 on a pseudo-terminal without a size
      } catch {
        return 80;
      }
    },
  });
  // Redrawn every second even when nothing is reported; the timer never keeps the process up.
  Deno.unrefTimer(setInterval(() => bar.tick(), 1000));
  return bar;
}

function writeAllSync(target: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += target.writeSync(bytes.subarray(offset));
}
