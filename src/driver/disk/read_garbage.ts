/**
 * The read loop's spent buffers, collected early. Each 1 MiB read of
 * file_range.ts is a fresh buffer, dead once the socket has taken it; V8
 * frees it only at the next young-generation collection, which memory
 * outside its heap starts only past ~64 MiB of such buffers. So one download
 * by the loop held ~64 MiB more RSS than by the runtime's stream
 * (scripts/memory_check.ts: 71 MiB of growth sending 1 or 2 GiB, against 15;
 * its limit is 50). With V8's gc exposed (scripts/compile.ts V8_FLAGS has
 * --expose-gc), this asks for a young-generation collection, in the
 * background, every COLLECT_EVERY bytes read: growth 24 MiB, for about a
 * tenth more CPU per GiB sent (0.46 against 0.41 CPU s/GiB, same run). A
 * process without the flag (the tests' in-process servers) reads as before.
 */

/** Bytes read by the loop between two collections. */
export const COLLECT_EVERY = 16 * 1024 * 1024;

type Collect = (options: { type: "minor"; execution: "async" }) => void;

export class ReadGarbage {
  #since = 0;
  readonly #collect: Collect | null;

  /** `collect`: V8's gc as --expose-gc exposes it; null reads without collecting. */
  constructor(collect: Collect | null = exposedGc()) {
    this.#collect = collect;
  }

  /** A buffer of `bytes` was read; past COLLECT_EVERY since the last, a collection is asked for. */
  read(bytes: number): void {
    this.#since += bytes;
    if (this.#since < COLLECT_EVERY || this.#collect === null) return;
    this.#since = 0;
    this.#collect({ type: "minor", execution: "async" });
  }
}

function exposedGc(): Collect | null {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? gc as Collect : null;
}
