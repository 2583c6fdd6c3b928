/**
 * Where a command's results go. stdout carries only results: text for a
 * person, or with --json exactly one JSON object, so scripts can parse it.
 * stderr carries the progress bar (terminals only) and the one error line.
 * Commands get this as an object, so the entry point decides the real
 * streams and nothing else touches Deno.stdout.
 */
import type { Progress } from "./progress.ts";

export interface CliIo {
  /** Writes text to stdout, as is. */
  out(text: string): Promise<void>;
  /** stdout as a byte stream (download -o -); piping into it must not close it. */
  stdoutBytes: WritableStream<Uint8Array>;
  /** One line on stderr. */
  err(line: string): void;
  /** The progress bar: a real one on a terminal, silentProgress otherwise. */
  progress: Progress;
  /** Aborted when the user interrupts (SIGINT). */
  signal: AbortSignal;
}

/** Prints the command's one JSON object. */
export async function printJson(io: CliIo, value: unknown): Promise<void> {
  io.progress.clear();
  await io.out(JSON.stringify(value, null, 2) + "\n");
}

/** Prints lines of text for a person. */
export async function printLines(io: CliIo, lines: readonly string[]): Promise<void> {
  io.progress.clear();
  if (lines.length > 0) await io.out(lines.join("\n") + "\n");
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? "").length)));
  return all.map((row) =>
    row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ")
      .trimEnd()
  );
}
