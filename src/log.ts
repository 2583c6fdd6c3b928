/** Structured logging: one JSON object per line. Never pass a token or a query string. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function createJsonLogger(write: (line: string) => void): Logger {
  const emit = (level: string, message: string, fields?: LogFields) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields }));
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

/** Logs to stderr, leaving stdout to the one "Listening on" line scripts wait for. */
export function createStderrLogger(): Logger {
  const encoder = new TextEncoder();
  return createJsonLogger((line) => {
    try {
      Deno.stderr.writeSync(encoder.encode(line + "\n"));
    } catch {
      // A closed stderr must never take a request down with it.
    }
  });
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
