/**
 * An upload, split when the tier's per-file cap requires it.
 *
 * Plan: GET /api/limits gives the cap. A file of at most `pieceSize` (100
 * MiB by default, and at most the cap) is one piece; a larger one is cut
 * into pieces of that size, and a manifest (manifest.ts) is stored last, as
 * its own piece, to name them.
 *
 * Pipeline: one pass reads the file in order and computes each piece's
 * PieceCIDv2 (and, for a split file, the whole file's SHA-256 on the same
 * bytes); as each cid is known the piece joins a queue that `concurrency`
 * uploaders drain in order. So piece k+1 is hashed while piece k uploads.
 *
 * Resume: every piece, the manifest included, is sent only if /api/pieces/{cid}
 * says it is not stored (piece_sending.ts), so re-running an interrupted
 * upload sends only what is missing; cids depend only on the bytes, and the
 * manifest's bytes only on the file, its name, its type and the piece size.
 * A stored piece still gets the caller's deal: one it owns already (a re-run
 * charges nothing twice), or a new one without the bytes (POST /api/deals).
 * Within a piece, a dropped connection resumes from what the server kept:
 * pieces over a few MiB go through the tus endpoint (resumable.ts), and with a
 * `resumeStore` even a later run (a reloaded page) continues them.
 *
 * Memory: the hashing pass streams through one reused 1 MiB buffer (plus
 * the hash pool's segments in flight). A piece over 4 MiB goes through the
 * tus endpoint, which takes a body without a Content-Length: in Deno it is
 * streamed from the source (nothing held); elsewhere it goes as 8 MiB slices.
 * A smaller piece is one POST /api/upload, which needs a Content-Length: a
 * Blob source sends a slice (a browser streams it from disk), other sources
 * read the piece whole, and fetch copies an array body, so such a piece in
 * flight costs up to twice its size.
 *
 * Failure: the first error aborts everything else (hashing, queued and
 * in-flight requests) and is what the upload rejects with; an abort of the
 * caller's signal rejects with the signal's reason.
 */
import { MANIFEST_CONTENT_TYPE } from "./types.ts";
import type {
  IncrementalSha256,
  Manifest,
  UploadedPiece,
  UploadOptions,
  UploadPhase,
  UploadProgress,
  UploadResult,
  UploadSource,
} from "./types.ts";
import type { Limits } from "./api_types.ts";
import { StorageError } from "./errors.ts";
import {
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  manifestFilename,
  manifestSizeBound,
  pieceFilename,
  serializeManifest,
} from "./manifest.ts";
import { cidsOf, pieceCid, readChunks } from "./piece_cid.ts";
import { ParallelPieceHasher } from "../../kernel/piece_cid/mod.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/mod.ts";
import { byteSourceOf, describedBy } from "./sources.ts";
import type { UploadableSource } from "./sources.ts";
import { toHex } from "./sha256.ts";
import type { Transport } from "./transport.ts";
import { sendPiece } from "./piece_sending.ts";

/** 100 MiB: the split size, and the sponsored tier's per-file cap. */
export const DEFAULT_PIECE_SIZE = 104_857_600;
export const DEFAULT_CONCURRENCY = 2;
/** The hashing pass reads byte streams into one buffer of this size (piece_cid.ts readChunks). */
const HASH_READ_BYTES = 1024 * 1024;
/** Hashing progress is reported at least every this many bytes (and at every piece's end). */
const PROGRESS_STEP_BYTES = 1024 * 1024;

export interface UploadContext {
  transport: Transport;
  pool: HashWorkerPool | null;
  sha256: () => IncrementalSha256;
}

/** A range of the file that is uploaded as one piece. */
export interface PlannedPiece {
  index: number;
  start: number;
  end: number;
}

interface HashedPiece extends PlannedPiece {
  cid: string;
}

/**
 * One piece when the file is at most pieceSize (capped by the per-file cap);
 * else pieces of that size, in order. Splitting at pieceSize rather than at
 * the cap is what the interface asks of clients ("files larger than 100 MB
 * … split into chunks"), and it bounds memory: a piece is read whole to be
 * sent, so nothing larger than a piece is ever held.
 */
export function planPieces(
  size: number,
  maxFileBytes: number | null,
  pieceSize: number,
): PlannedPiece[] {
  if (!Number.isSafeInteger(pieceSize) || pieceSize < 1) {
    throw new RangeError(
      `pieceSize must be a whole number of bytes, at least 1 (got ${pieceSize})`,
    );
  }
  // null: the tier has no per-file cap (wallet), so only the piece size splits.
  const each = maxFileBytes === null ? pieceSize : Math.min(pieceSize, maxFileBytes);
  if (size <= each) return [{ index: 0, start: 0, end: size }];
  const pieces: PlannedPiece[] = [];
  for (let start = 0; start < size; start += each) {
    pieces.push({ index: pieces.length, start, end: Math.min(size, start + each) });
  }
  return pieces;
}

export async function upload(
  context: UploadContext,
  source: UploadSource,
  options: UploadOptions = {},
): Promise<UploadResult> {
  const file = byteSourceOf(source);
  const described = describedBy(source);
  const name = options.filename ?? described.name;
  const contentType = options.contentType ?? described.type ?? "application/octet-stream";
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a whole number, at least 1 (got ${concurrency})`);
  }
  const failed = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, failed.signal]) : failed.signal;
  const { transport } = context;

  const limits = await transport.json<Limits>({
    method: "GET",
    path: "/api/limits",
    repeatable: "safe",
    signal,
  });
  const plan = planPieces(file.size, limits.maxFileBytes, options.pieceSize ?? DEFAULT_PIECE_SIZE);
  const split = plan.length > 1;
  if (
    split && limits.maxFileBytes !== null &&
    manifestSizeBound(plan.length, name, contentType) > limits.maxFileBytes
  ) {
    throw new StorageError(
      413,
      "too_large",
      `Cannot split ${file.size} bytes into ${plan.length} pieces: their manifest would be over ` +
        `the per-file cap of ${limits.maxFileBytes} bytes; use a larger pieceSize`,
    );
  }

  const progress = new ProgressReport(options.onProgress, file.size, plan.length);
  const whole = split ? context.sha256() : null;
  const queue = new Queue<HashedPiece>();
  const pieces: UploadedPiece[] = new Array(plan.length);

  const hashing = async () => {
    try {
      for (const piece of plan) {
        const cid = await hashPiece(file, piece, { pool: context.pool, whole, signal, progress });
        queue.push({ ...piece, cid });
      }
    } finally {
      queue.close();
    }
  };
  const uploading = async () => {
    for (let piece = await queue.take(); piece !== null; piece = await queue.take()) {
      signal.throwIfAborted();
      progress.phase("uploading");
      const { start, end, index } = piece;
      const sent = await sendPiece(transport, {
        cid: piece.cid,
        source: file,
        start,
        end,
        contentType,
        filename: split ? pieceFilename(name, index, plan.length) : name,
        signal,
        onSent: (bytes) => progress.sending(index, bytes),
        resumeStore: options.resumeStore,
      });
      pieces[index] = { cid: piece.cid, size: end - start, ...sent };
      progress.pieceStored(index, end - start);
    }
  };
  await allOrFirstError(
    [hashing, ...Array.from({ length: Math.min(concurrency, plan.length) }, () => uploading)],
    failed,
  );

  const deals = pieces.flatMap((piece) => piece.via === "owned" ? [] : [piece.dealId]);
  const done = (cid: string, manifest: Manifest | null): UploadResult => {
    progress.phase("done");
    return {
      cid,
      retrievalUrl: transport.retrievalUrl(cid),
      fileUrl: manifest ? transport.fileUrl(cid) : transport.retrievalUrl(cid),
      size: file.size,
      pieces,
      deals,
      manifest,
    };
  };
  if (!split) return done(pieces[0].cid, null);

  progress.phase("manifest");
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    name,
    contentType,
    size: file.size,
    sha256: toHex(whole!.digest()),
    pieces: pieces.map(({ cid, size }) => ({ cid, size })),
  };
  const manifestBytes = serializeManifest(manifest);
  const { cid } = await pieceCid(manifestBytes, { pool: null, signal });
  const sent = await sendPiece(transport, {
    cid,
    source: byteSourceOf(manifestBytes),
    start: 0,
    end: manifestBytes.byteLength,
    contentType: MANIFEST_CONTENT_TYPE,
    filename: manifestFilename(name),
    signal,
    onSent: () => {},
  });
  if (sent.via !== "owned") deals.push(sent.dealId);
  return done(cid, manifest);
}

/** Streams one piece's range through the piece hasher (and the whole-file SHA-256). */
async function hashPiece(
  file: UploadableSource,
  piece: PlannedPiece,
  options: {
    pool: HashWorkerPool | null;
    whole: IncrementalSha256 | null;
    signal: AbortSignal;
    progress: ProgressReport;
  },
): Promise<string> {
  const hasher = new ParallelPieceHasher({ pool: options.pool });
  const chunks = readChunks(file.stream(piece.start, piece.end), options.signal, {
    reuseBytes: HASH_READ_BYTES,
  });
  for await (const chunk of chunks) {
    const wait = hasher.update(chunk);
    options.whole?.update(chunk);
    if (wait) await wait;
    options.progress.hashed(chunk.byteLength);
  }
  const digest = await hasher.digest();
  if (digest.size !== piece.end - piece.start) {
    throw new Error(
      `The source gave ${digest.size} bytes for [${piece.start}, ${piece.end}): did the file change?`,
    );
  }
  options.progress.hashed(0, true);
  return cidsOf(digest).cid;
}

/**
 * Runs the tasks together. The first to fail aborts `failed` (which every
 * task's signal follows) and its error is thrown once all have settled, so
 * nothing is left running behind the caller's back.
 */
async function allOrFirstError(
  tasks: (() => Promise<void>)[],
  failed: AbortController,
): Promise<void> {
  let first: { error: unknown } | null = null;
  await Promise.all(tasks.map((task) =>
    task().catch((error) => {
      first ??= { error };
      failed.abort(error);
    })
  ));
  if (first !== null) throw (first as { error: unknown }).error;
}

/** A FIFO that producers close; take() waits for an item, null once closed and empty. */
class Queue<T> {
  readonly #items: T[] = [];
  readonly #waiting: ((item: T | null) => void)[] = [];
  #closed = false;

  push(item: T): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(item);
    else this.#items.push(item);
  }

  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) waiter(null);
  }

  take(): Promise<T | null> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift()!);
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
}

class ProgressReport {
  readonly #listener: ((progress: UploadProgress) => void) | undefined;
  readonly #progress: UploadProgress;
  /** Bytes on the wire of each piece being sent (acknowledged ones are in bytesAcknowledged). */
  readonly #sending = new Map<number, number>();
  #reportedHashed = 0;
  #reportedSent = 0;

  constructor(
    listener: ((progress: UploadProgress) => void) | undefined,
    totalBytes: number,
    piecesTotal: number,
  ) {
    this.#listener = listener;
    this.#progress = {
      phase: "hashing",
      totalBytes,
      bytesHashed: 0,
      bytesSent: 0,
      bytesAcknowledged: 0,
      piecesDone: 0,
      piecesTotal,
    };
  }

  phase(phase: UploadPhase): void {
    if (this.#progress.phase === phase) return;
    this.#progress.phase = phase;
    this.#report();
  }

  hashed(bytes: number, pieceEnd = false): void {
    this.#progress.bytesHashed += bytes;
    if (pieceEnd || this.#progress.bytesHashed - this.#reportedHashed >= PROGRESS_STEP_BYTES) {
      this.#reportedHashed = this.#progress.bytesHashed;
      this.#report();
    }
  }

  /** Piece `index` has `bytes` on the wire (or stored): reported every PROGRESS_STEP_BYTES. */
  sending(index: number, bytes: number): void {
    this.#sending.set(index, bytes);
    this.#progress.bytesSent = this.#progress.bytesAcknowledged + sum(this.#sending.values());
    if (Math.abs(this.#progress.bytesSent - this.#reportedSent) >= PROGRESS_STEP_BYTES) {
      this.#report();
    }
  }

  pieceStored(index: number, bytes: number): void {
    this.#sending.delete(index);
    this.#progress.bytesAcknowledged += bytes;
    this.#progress.bytesSent = this.#progress.bytesAcknowledged + sum(this.#sending.values());
    this.#progress.piecesDone++;
    this.#report();
  }

  #report(): void {
    this.#reportedSent = this.#progress.bytesSent;
    this.#listener?.({ ...this.#progress });
  }
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
