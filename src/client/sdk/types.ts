/**
 * The client SDK's public shapes. Web APIs only (fetch, streams, Blob,
 * WebAssembly, Workers): the same code runs in Deno and in a browser page.
 * File-system sources live in a separate Deno-only module (fs.ts).
 */
import type { Manifest } from "../../kernel/manifest_format.ts";

/**
 * Bytes to upload or hash. A Blob (a browser File included) is read in
 * slices; a Uint8Array is wrapped in a Blob; a `ByteSource` is anything that
 * can hand out a byte range as a stream (fs.ts's `fileSource(path)` in Deno).
 */
export type UploadSource = Uint8Array<ArrayBuffer> | Blob | ByteSource;

/** Random access to a sized source, one range at a time. */
export interface ByteSource {
  readonly size: number;
  /** The bytes [start, end) as a stream. */
  stream(start: number, end: number): ReadableStream<Uint8Array>;
  /** The bytes [start, end) whole, to send as a request body with its Content-Length. */
  bytes(start: number, end: number): Promise<Uint8Array<ArrayBuffer>>;
}

export interface StorageClientOptions {
  /** Base URL of the server, e.g. http://127.0.0.1:8080 (no trailing slash needed). */
  server: string;
  /** A pk_live_ token; without one, uploads are sponsored and account calls answer 401. */
  token?: string | null;
  /** Retries of network errors, 5xx, 408 and short 429/503 Retry-Afters. */
  retry?: RetryOptions;
  /** Hashing Workers; default one per CPU (at most 8); 0 hashes on the calling thread. */
  hashWorkers?: number;
  /**
   * Where the hashing Workers' script is served; default a data: URL. A page
   * whose Content-Security-Policy refuses data: Workers uses the server's
   * `/app/hash-worker.js`.
   */
  hashWorkerUrl?: string;
  /** fetch to use (tests, proxies); default globalThis.fetch. */
  fetch?: typeof fetch;
  /**
   * Incremental SHA-256 for the manifest's whole-file digest and bafkrei… checks;
   * default the portable one (sha256.ts). In Deno or Node, native_sha256.ts's
   * `nativeSha256` is about ten times faster.
   */
  sha256?: () => IncrementalSha256;
}

/** An incremental SHA-256: update() any number of times, then digest() once. */
export interface IncrementalSha256 {
  /** Adds bytes; the caller may reuse its buffer as soon as this returns. */
  update(bytes: Uint8Array): void;
  /** The 32-byte digest; no update may follow. */
  digest(): Uint8Array<ArrayBuffer>;
}

export interface RetryOptions {
  /** Attempts per request, the first included (default 5). */
  attempts?: number;
  /** First backoff; doubles each time, with jitter (default 250 ms). */
  baseDelayMs?: number;
  /** Longest wait between attempts, Retry-After included (default 30 s). */
  maxDelayMs?: number;
}

export type UploadPhase = "hashing" | "uploading" | "manifest" | "done";

/** Progress of one upload, for a progress bar; totals are known from the start. */
export interface UploadProgress {
  phase: UploadPhase;
  totalBytes: number;
  /** Bytes whose piece cid has been computed. */
  bytesHashed: number;
  /**
   * Bytes on the wire: sent to the server so far, the piece being sent included,
   * and pieces it had already. It steps back when a dropped connection is resumed
   * from what the server kept.
   */
  bytesSent: number;
  /** Bytes of the pieces the server has confirmed (stored, or dealt on without their bytes). */
  bytesAcknowledged: number;
  piecesDone: number;
  piecesTotal: number;
}

/**
 * Where unfinished resumable uploads' URLs are kept between runs (a web
 * page's localStorage), so that uploading the same file again continues what
 * was sent instead of starting over.
 */
export interface ResumeStore {
  get(key: string): string | null | undefined | Promise<string | null | undefined>;
  set(key: string, url: string): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

export interface UploadOptions {
  /** Suggested file name (X-Filename; recorded in the manifest). */
  filename?: string;
  /** Content-Type of the file; default the Blob's type, else application/octet-stream. */
  contentType?: string;
  onProgress?: (progress: UploadProgress) => void;
  signal?: AbortSignal;
  /** Pieces uploaded at once (default 2). */
  concurrency?: number;
  /** Files larger than this are split into pieces of it (default 100 MiB, at most the per-file cap). */
  pieceSize?: number;
  /** Keeps unfinished pieces' upload URLs, so a later upload of the same file continues them. */
  resumeStore?: ResumeStore;
}

export interface UploadedPiece {
  cid: string;
  size: number;
  /** The caller's deal on the piece: made by this upload, or one it owned already. */
  dealId: string;
  /**
   * How: "sent" (its bytes went up), "deal" (it was stored already: a deal made
   * without its bytes, POST /api/deals), "owned" (the caller had a deal on it: a
   * re-run of an interrupted upload).
   */
  via: "sent" | "deal" | "owned";
}

export interface UploadResult {
  /** The manifest's PieceCIDv2 for a split file; the single piece's otherwise. */
  cid: string;
  /** `<server>/p/<cid>`: the piece itself (for a split file, its manifest's bytes). */
  retrievalUrl: string;
  /**
   * The URL that serves the whole file, ranges included: `<server>/f/<cid>` for a split file
   * (the pieces in order, as one body), the same as retrievalUrl for a single piece.
   */
  fileUrl: string;
  /** Bytes of the original file. */
  size: number;
  /** The file's pieces in order (one when not split). */
  pieces: UploadedPiece[];
  /** Deal ids made by this upload, the manifest's included (deals owned already are not). */
  deals: string[];
  /** The manifest, when the file was split. */
  manifest: Manifest | null;
}

export interface DownloadProgress {
  totalBytes: number | null;
  bytesReceived: number;
  piecesDone: number;
  piecesTotal: number;
}

export interface DownloadOptions {
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
  /** Follow a manifest to the file it describes (default true); false gives the manifest's bytes. */
  followManifest?: boolean;
}

/** What a cid downloads to, from the manifest or the piece's headers (no file bytes read). */
export interface DownloadInfo {
  cid: string;
  /** Bytes of the original file. */
  size: number;
  /** The file name: the manifest's, or the piece's stored X-Filename; null when none. */
  name: string | null;
  contentType: string;
  /** The manifest when the cid names a split file; null for a single piece. */
  manifest: Manifest | null;
  /** Whether download() checks the bytes (false for an opaque cid: passed through unchecked). */
  verified: boolean;
}

// The manifest's shape and type are defined with its format, which the server shares.
export { MANIFEST_CONTENT_TYPE } from "../../kernel/manifest_format.ts";
export type { Manifest };
