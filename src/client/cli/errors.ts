/**
 * What a failed command prints and how it exits: exactly one line on stderr,
 * `error: <code>: <message>`, and an exit status a script can branch on. The
 * statuses are a documented contract (docs/client.md#exit-codes), so they are
 * decided here and nowhere else. None of these prints a stack trace; only an
 * error nobody expected (a bug) does.
 */
import { NetworkError, StorageError, VerificationError } from "../sdk/mod.ts";
import { UsageError } from "./args.ts";

export const EXIT = {
  ok: 0,
  /** The server answered with an error (StorageError): quota, scope, not found, … */
  refused: 1,
  /** Bad flags or arguments, a missing input file, a target that exists without --force. */
  usage: 2,
  /** Downloaded bytes did not match their cid (VerificationError). */
  verification: 3,
  /** The server could not be reached, or the connection broke (NetworkError). */
  network: 4,
  /** Reading or writing a local file failed midway (disk full, I/O error). */
  localFile: 5,
  /** Interrupted (Ctrl-C), as shells report SIGINT. */
  interrupted: 130,
} as const;

/** A problem with a local file the user named; `usage` before any work, `localFile` midway. */
export class LocalFileError extends Error {
  readonly exitCode: number;
  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "LocalFileError";
    this.exitCode = options.exitCode ?? EXIT.usage;
  }
}

/** Thrown when the user interrupted the command (SIGINT). */
export class InterruptedError extends Error {
  /** `message`: "interrupted", or what the interrupted command leaves behind. */
  constructor(message = "interrupted") {
    super(message);
    this.name = "InterruptedError";
  }
}

export interface Failure {
  exitCode: number;
  /** The one line for stderr, without a trailing newline. */
  line: string;
}

/** What a failure's line can point to: where the CLI looked for the server, and whether it had a token. */
export interface FailureContext {
  server?: string;
  hasToken?: boolean;
}

/** The exit status and stderr line for an expected failure; null for anything else (a bug). */
export function failureOf(error: unknown, context: FailureContext = {}): Failure | null {
  if (error instanceof UsageError) return { exitCode: EXIT.usage, line: `error: ${error.message}` };
  if (error instanceof LocalFileError) {
    return { exitCode: error.exitCode, line: `error: ${oneLine(error.message)}` };
  }
  if (error instanceof InterruptedError) {
    return { exitCode: EXIT.interrupted, line: `error: ${oneLine(error.message)}` };
  }
  if (error instanceof StorageError) {
    const wait = error.retryAfterSeconds === undefined || error.retryAfterSeconds === null
      ? ""
      : ` (try again in ${duration(error.retryAfterSeconds)})`;
    let message = oneLine(error.message).replace(new RegExp(`^${error.code}:\\s*`), "");
    if (error.status === 401 && context.hasToken === false) {
      // The server's words are for any HTTP client; a person at the CLI sets a variable.
      message = "this command needs a token: set STORAGE_TOKEN (storage signup gets you one)";
    }
    return { exitCode: EXIT.refused, line: `error: ${error.code}: ${message}${wait}` };
  }
  if (error instanceof VerificationError) {
    return {
      exitCode: EXIT.verification,
      line: `error: verification_failed: ${oneLine(error.message)}`,
    };
  }
  if (error instanceof NetworkError && untrustedCertificate(error)) {
    // The server answered; this machine does not trust who it says it is.
    return {
      exitCode: EXIT.network,
      line: `error: tls: ${oneLine(error.message)}; the server's certificate is not trusted ` +
        "here: if it is right, name its CA certificate file in DENO_CERT (DENO_CERT=ca.pem storage …)",
    };
  }
  if (error instanceof NetworkError) {
    const where = context.server ? ` at ${context.server}` : "";
    return {
      exitCode: EXIT.network,
      line: `error: network: ${oneLine(error.message)}; the server${where} may not be running ` +
        "(--server or STORAGE_URL names it)",
    };
  }
  return null;
}

/** Whether a request failed because the server's TLS certificate is not trusted (rustls's words). */
function untrustedCertificate(error: NetworkError): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (/invalid peer certificate|certificate verify failed|UnknownIssuer/i.test(e.message)) {
      return true;
    }
  }
  return false;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/** 59 s, 12 min, 3 h 5 min. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  const minutes = Math.round((s % 3600) / 60);
  return `${Math.floor(s / 3600)} h${minutes ? ` ${minutes} min` : ""}`;
}
