/**
 * Structured logging, one event per line, in one of two renderings of the same
 * fields: JSON for log collectors (the format machines parse, unchanged from
 * earlier versions), or `time level message key=value …` text for a person at
 * a terminal. Never pass a token or a query string.
 */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  /** A line already serialised as one JSON object (for hot paths); `time` is prepended. */
  raw?(jsonFieldsWithoutBraces: string): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** How lines are rendered: "auto" in the configuration resolves to one of these. */
export type LineFormat = "json" | "text";

/** "auto" is text when stderr is a terminal (a person reads it), JSON otherwise. */
export function resolveLogFormat(
  format: LineFormat | "auto",
  isTerminal: () => boolean = () => Deno.stderr.isTerminal(),
): LineFormat {
  return format === "auto" ? (isTerminal() ? "text" : "json") : format;
}

export function createLogger(format: LineFormat, write: (line: string) => void): Logger {
  return format === "text" ? createTextLogger(write) : createJsonLogger(write);
}

/** The current time as ISO 8601; under load many lines share a millisecond, formatted once. */
function isoClock(): () => string {
  let lastMs = NaN;
  let lastIso = "";
  return () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };
}

export function createJsonLogger(write: (line: string) => void): Logger {
  const isoNow = isoClock();
  const emit = (level: string, message: string, fields?: LogFields) =>
    write(JSON.stringify({ time: isoNow(), level, msg: message, ...fields }));
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    raw: (fields) => write(`{"time":"${isoNow()}",${fields}}`),
  };
}

/**
 * `2026-11-22T12:00:00.000Z info  listening url=http://127.0.0.1:8080 tls=off`:
 * the level padded to one width so messages line up, fields as key=value in
 * the order given, values quoted (JSON string syntax) only when they hold a
 * space, a quote, an `=`, a control character, or nothing. A value with a line
 * break (a stack) stays on its line as `\n`: one event, one line.
 */
export function createTextLogger(write: (line: string) => void): Logger {
  const isoNow = isoClock();
  const emit = (level: string, message: string, fields?: LogFields) =>
    write(`${isoNow()} ${level.padEnd(5)} ${message}${formatFields(fields)}`);
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    raw: (json) => {
      const { level, msg, ...fields } = JSON.parse(`{${json}}`);
      emit(String(level), String(msg), fields);
    },
  };
}

function formatFields(fields: LogFields | undefined): string {
  let out = "";
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined) out += ` ${key}=${formatValue(value)}`;
  }
  return out;
}

/** Characters a bare value may hold; anything else (spaces, quotes, `=`, controls) is quoted. */
const BARE_VALUE = /^[\w.,:;/@+%~*#&?!()[\]{}<>^|$-]+$/;

function formatValue(value: string | number | boolean | null): string {
  if (typeof value !== "string") return String(value);
  return BARE_VALUE.test(value) ? value : JSON.stringify(value);
}

export interface FlushableLogger extends Logger {
  /** Resolves once everything logged so far is written (call before exiting). */
  flush(): Promise<void>;
}

/** Where the stderr logger writes; Deno.stderr in production. */
export interface LogOutput {
  write(bytes: Uint8Array): Promise<number>;
}

export interface StderrLoggerOptions {
  output?: LogOutput;
  /**
   * Lines waiting beyond this many characters are dropped (and counted): a log
   * collector slower than the traffic must not make requests wait or memory grow.
   */
  maxPendingChars?: number;
  /** How lines are rendered (default JSON). */
  format?: LineFormat;
}

/**
 * Logs to stderr, leaving stdout to the one "Listening on" line scripts wait
 * for. Lines are batched (every 50 ms, or at 64 KiB) and written by one
 * asynchronous write at a time: a synchronous write stalls the serving thread
 * whenever the pipe to the log collector is full, which cost about 15% of
 * small-piece throughput. While a write is in flight new lines gather and go
 * out with the next one; past maxPendingChars they are dropped, and a line
 * saying how many follows as soon as the output catches up.
 */
export function createStderrLogger(options: StderrLoggerOptions = {}): FlushableLogger {
  const output = options.output ?? Deno.stderr;
  const maxPendingChars = options.maxPendingChars ?? 8 * 1024 * 1024;
  const encoder = new TextEncoder();
  let pending: string[] = [];
  let pendingChars = 0;
  let dropped = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let writing: Promise<void> | null = null;

  const takeBatch = (): Uint8Array | null => {
    if (pending.length === 0) return null;
    const bytes = encoder.encode(pending.join(""));
    pending = [];
    pendingChars = 0;
    if (dropped > 0) {
      // Lines are dropped only while others wait, so this notice follows their batch.
      const count = dropped;
      dropped = 0;
      logger.warn("log lines dropped: the output was too slow", { dropped: count });
    }
    return bytes;
  };

  const writeOut = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (writing !== null) return; // the write in flight takes what is pending next
    let batch = takeBatch();
    if (batch === null) return;
    writing = (async () => {
      while (batch !== null) {
        try {
          let offset = 0;
          while (offset < batch.length) offset += await output.write(batch.subarray(offset));
        } catch {
          // A closed stderr must never take a request down with it.
        }
        batch = takeBatch();
      }
    })().finally(() => {
      writing = null;
      // Lines that arrived between the last batch and now.
      if (pending.length > 0) writeOut();
    });
  };

  const logger = createLogger(options.format ?? "json", (line) => {
    if (pendingChars > maxPendingChars) {
      dropped++;
      return;
    }
    pending.push(line + "\n");
    pendingChars += line.length + 1;
    if (pendingChars >= 65536) writeOut();
    else if (timer === null && writing === null) {
      timer = setTimeout(writeOut, 50);
      Deno.unrefTimer(timer);
    }
  });
  return {
    ...logger,
    async flush() {
      writeOut();
      while (writing !== null) await writing;
    },
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, raw() {} };
