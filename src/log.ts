/** Structured logging: one JSON object per line. Never pass a token or a query string. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  /** A line already serialised as one JSON object (for hot paths); `time` is prepended. */
  raw?(jsonFieldsWithoutBraces: string): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function createJsonLogger(write: (line: string) => void): Logger {
  // Under load many lines share a millisecond: format its timestamp once.
  let lastMs = NaN;
  let lastIso = "";
  const isoNow = () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };
  const emit = (level: string, message: string, fields?: LogFields) =>
    write(JSON.stringify({ time: isoNow(), level, msg: message, ...fields }));
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    raw: (fields) => write(`{"time":"${isoNow()}",${fields}}`),
  };
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

  const logger = createJsonLogger((line) => {
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
