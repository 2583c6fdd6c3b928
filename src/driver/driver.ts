/**
 * The piece storage driver: the only thing the rest of the service (the
 * domain code beside it, the handlers, the operator's work) knows about where
 * bytes live. Two drivers implement it, and both pass one conformance suite
 * (tests/conformance/store_conformance.ts, run by storage_disk_test.ts and
 * storage_s3_test.ts beside it):
 *
 *   driver/
 *   ├── driver.ts        this interface and its typed failures
 *   ├── body_pump.ts     what every driver's stage shares: length, stalls, SHA-256
 *   ├── staged_piece.ts  what every driver's staged piece shares: it settles once
 *   ├── unbound.ts       no storage bound: every operation is "offline"
 *   ├── disk/            files under <data-dir>/pieces (layout.ts draws them)
 *   └── s3/              objects of one bucket (R2, Ceph radosgw, AWS)
 *
 * Writing is two-phase, like a registry blob upload: `stage` streams the
 * bytes somewhere invisible and reports their size (and SHA-256 when asked);
 * the caller decides (cid conflict? already stored?) and then `commit`s or
 * `discard`s. A piece is visible to `open` only after a successful commit.
 *
 * SHA-256 is optional on the way in because it costs about a quarter of the
 * upload's throughput on the thread that receives the body, and a first upload
 * of a cid does not need it yet: `sha256Of` reads it back afterwards.
 *
 * Reading takes an optional byte range, which every driver serves without
 * reading what lies outside it (the disk driver reads from an offset, the S3
 * driver sends a ranged GET): HTTP ranges, a split file's pieces and
 * the IPFS gateway's blocks at known offsets all read through `open(key, range)`.
 * A range sent straight as an answer may be asked for with `answerWithLength`
 * (OpenOptions): the disk driver then sends it as it sends a whole piece.
 */
import type { MinBodyRate } from "../kernel/streams/read_watchdog.ts";

export interface StoreHealth {
  ok: boolean;
  /** Why the store is not usable, for /healthz and logs. */
  detail: string;
}

/** What stat tells of a committed piece. */
export interface PieceStat {
  size: number;
  /** When its bytes were last written, in Unix milliseconds (an orphan's age, ops/gc.ts). */
  modifiedAt: number;
}

export interface OpenedPiece {
  /** The whole piece's size, whatever range was asked for. */
  size: number;
  /** The bytes asked for: the whole piece, or the range. */
  body: ReadableStream<Uint8Array>;
}

/** How the bytes `open` gives will be used. */
export interface OpenOptions {
  /**
   * The body goes straight out as an HTTP answer whose Content-Length is the
   * range's length, nothing reads it in JavaScript, and Deno's server cuts it
   * there (HTTP/1.1, the connection kept alive; not HTTP/2: see
   * net/serve_connection.ts cutsAtContentLength). A driver may then give a
   * body that runs on past the range's end: the disk driver gives the
   * runtime's own file stream from the range's offset when its read loop is
   * busy (disk_store.ts LOOP_READERS), sent without a JavaScript step or a
   * buffer of ours per chunk.
   */
  answerWithLength?: boolean;
}

/**
 * `length` bytes from `offset` (0-based). The offset must lie inside the piece
 * (a RangeError otherwise); a range that runs past the end is cut at the end.
 */
export interface ByteRange {
  offset: number;
  length: number;
}

export interface StagedPiece {
  readonly size: number;
  /** Lowercase hex SHA-256 of the staged bytes, when StageOptions.computeSha256 asked for it. */
  readonly sha256: string | null;
  /** The SHA-256 of the staged bytes: the one computed on the way, or read back now. */
  computeSha256(): Promise<string>;
  /** Makes the bytes durable and visible under key (replacing any orphan left there). */
  commit(key: string): Promise<void>;
  /** Throws the staged bytes away. Safe to call more than once, and after commit. */
  discard(): Promise<void>;
}

export interface StageOptions {
  /** The exact number of bytes the stream must deliver (the Content-Length). */
  expectedBytes: number;
  /** Aborting stops the write and throws the staged bytes away. */
  signal?: AbortSignal;
  /**
   * Sees every chunk, in order, before it is written (for verifying hashes on the
   * way). The chunk's memory is reused afterwards: copy what you keep. A returned
   * promise pauses reading until it settles.
   */
  onChunk?: (chunk: Uint8Array) => Promise<void> | undefined;
  /** Give up (failure "stalled") when no bytes arrive for this long. */
  idleTimeoutMs?: number;
  /** With idleTimeoutMs: give up (failure "too_slow") on a body slower than this on average. */
  minRate?: MinBodyRate | null;
  /** Hash the bytes (SHA-256) while they stream in; default true. */
  computeSha256?: boolean;
}

/**
 * Where a resumable upload's bytes are while it is incomplete: a value the
 * caller keeps (as JSON, in the database) and hands back to every call, so
 * any process that shares the store and the database can continue it.
 */
export interface PartialState {
  /** The upload's id: 32 hex digits. */
  readonly id: string;
  /** Bytes stored so far. */
  readonly size: number;
  /** The driver's own description of them (JSON values only). */
  readonly data?: unknown;
}

export interface AppendOptions {
  /** At most this many bytes (the declared Content-Length, or what the upload still lacks). */
  expectedBytes: number;
  /** Sees every chunk, in order, as StageOptions.onChunk does. */
  onChunk?: (chunk: Uint8Array) => Promise<void> | undefined;
  /** Aborting ends the append like a cut body: what arrived is kept. */
  signal?: AbortSignal;
  /** A body silent this long ends the append like a cut body. */
  idleTimeoutMs?: number;
  /** With idleTimeoutMs: a body slower than this on average ends like a cut body ("too_slow"). */
  minRate?: MinBodyRate | null;
}

export interface AppendResult {
  /** The state with the appended bytes: the caller records it. */
  state: PartialState;
  /** Why the body ended before expectedBytes (it was cut, stalled, aborted); null if it did not. */
  cut: StoreError | null;
}

/**
 * The bytes of resumable uploads (tus), appended over many requests and kept
 * across restarts until the upload finishes (`staged` → commit), ends or
 * expires (`remove`). Every append starts where the recorded state ends: bytes
 * an append wrote that were never recorded (a crash, a writer that lost the
 * race) are overwritten or forgotten.
 */
export interface PartialStore {
  /** An empty partial upload under id, for `length` bytes in all. */
  create(id: string, options: { length: number }): Promise<PartialState>;
  /**
   * Appends the body at state.size. A body that ends early is no failure: what
   * arrived is stored and `cut` says why. A store failure throws, and the state
   * to record is then still the one given.
   */
  append(
    state: PartialState,
    body: ReadableStream<Uint8Array>,
    options: AppendOptions,
  ): Promise<AppendResult>;
  /** Bytes [from, to) of the partial upload, read back (to rebuild a hash after a restart). */
  read(
    state: PartialState,
    range: { from: number; to: number; signal?: AbortSignal },
  ): ReadableStream<Uint8Array>;
  /** The whole partial upload as a staged piece, committed or discarded like stage()'s. */
  staged(state: PartialState, digest: { sha256: string | null }): StagedPiece;
  /** After `current` was recorded: drops what `previous` held that `current` does not. */
  release(previous: PartialState, current: PartialState): Promise<void>;
  /** Removes a partial upload and whatever its appends left. */
  remove(id: string): Promise<void>;
  /** The partial uploads present, with when each last changed (for sweeping orphans). */
  list(): AsyncIterable<{ id: string; modifiedMs: number }>;
}

export interface PieceStore {
  /** Value of the X-Service-Source header: "stage" (local disk) or "r2". */
  readonly source: string;
  /** Whether the store can read and write right now. */
  check(): Promise<StoreHealth>;
  stat(key: string): Promise<PieceStat | null>;
  /**
   * The piece's bytes, or only `range` of them (with `answerWithLength`, at
   * least them: see OpenOptions); null when nothing is stored under key.
   */
  open(key: string, range?: ByteRange, options?: OpenOptions): Promise<OpenedPiece | null>;
  /**
   * Optional: the local file that holds a committed piece (the disk driver),
   * so a proxy in front can send it itself (--x-accel-redirect). Stores
   * without local files (S3) leave it out.
   */
  localFileOf?(key: string): string;
  /**
   * Lowercase hex SHA-256 of a committed piece, read back from the store; null when
   * missing. Aborting the signal abandons the read (it throws the signal's reason).
   */
  sha256Of(key: string, options?: { signal?: AbortSignal }): Promise<string | null>;
  stage(body: ReadableStream<Uint8Array>, options: StageOptions): Promise<StagedPiece>;
  delete(key: string): Promise<boolean>;
  list(): AsyncIterable<string>;
  /** Removes leftovers of uploads that were in flight when the process died. */
  cleanup(options?: CleanupOptions): Promise<{ removedTemporaryFiles: number }>;
  /** Resumable uploads' bytes (tus). */
  readonly partials: PartialStore;
}

export interface CleanupOptions {
  /**
   * For a store several instances write to: the instances known alive, and an
   * instant (ms since the epoch) before which the leftovers of any other
   * instance are removed at once, whatever their age. Without it, only
   * leftovers old enough that no upload can still be writing them go.
   */
  writers?: { live: ReadonlySet<string>; before: number };
}

export type StoreFailure =
  /** The backend is missing, unreadable or unwritable. */
  | "offline"
  /** No space left; nothing partial was kept. */
  | "full"
  /** The stream ended (or failed) before expectedBytes arrived. */
  | "short_body"
  /** No bytes arrived for idleTimeoutMs. */
  | "stalled"
  /** The bytes arrived slower than StageOptions.minRate. */
  | "too_slow"
  /** The stream delivered more than expectedBytes. */
  | "long_body"
  /** The backend refused the write for another reason (an I/O error, a blocked path). */
  | "rejected";

export class StoreError extends Error {
  readonly failure: StoreFailure;
  constructor(failure: StoreFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreError";
    this.failure = failure;
  }
}

/**
 * How many bytes `range` covers of a piece of `size` bytes (cut at the end);
 * a RangeError when it does not start inside the piece or is not whole numbers.
 */
export function bytesInRange(range: ByteRange, size: number): number {
  const { offset, length } = range;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || length < 1) {
    throw new RangeError(`Cannot read ${length} bytes at ${offset}: not a byte range`);
  }
  if (offset < 0 || offset >= size) {
    throw new RangeError(`Cannot read at ${offset}: the piece has ${size} bytes`);
  }
  return Math.min(length, size - offset);
}
