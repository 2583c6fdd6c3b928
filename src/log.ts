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
  /** Writes out what is buffered (call before exiting). */
  flush(): void;
}

/**
 * Logs to stderr, leaving stdout to the one "Listening on" line scripts wait
 * for. Lines are buffered and written in batches (every 50 ms, or at 64 KiB):
 * a synchronous write per request would cost more than serving a small piece.
 */
export function createStderrLogger(): FlushableLogger {
  const encoder = new TextEncoder();
  let buffer: string[] = [];
  let bufferedChars = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (buffer.length === 0) return;
    const text = buffer.join("");
    buffer = [];
    bufferedChars = 0;
    try {
      const bytes = encoder.encode(text);
      let offset = 0;
      while (offset < bytes.length) offset += Deno.stderr.writeSync(bytes.subarray(offset));
    } catch {
      // A closed stderr must never take a request down with it.
    }
  };
  const logger = createJsonLogger((line) => {
    buffer.push(line + "\n");
    bufferedChars += line.length + 1;
    if (bufferedChars >= 65536) flush();
    else if (timer === null) {
      timer = setTimeout(flush, 50);
      Deno.unrefTimer(timer);
    }
  });
  return { ...logger, flush };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, raw() {} };
