/**
 * A scrub re-reads every stored piece and checks it against what was recorded
 * when it was accepted, because disks rot silently and a service that serves
 * by content id must never serve other bytes under it. For each piece row:
 *
 *   - the file is there, and has the recorded size;
 *   - its SHA-256 equals the recorded one (when recorded);
 *   - for a verifiable cid (PieceCIDv2/v1, sha2-256 CIDv1), it hashes to the cid.
 *
 * A piece that fails is marked corrupt in the database (retrieval then answers
 * 503 piece_corrupt); a marked piece that passes again (its file restored from
 * a backup) is unmarked. Marks change only from the state the scrub read, so a
 * repair by upload in between is never undone (see CatalogRecords). A piece a
 * garbage-collection sweep removed (or is removing) has no bytes to check.
 * Files in the store that no row names are reported as orphans, and left
 * alone (`main.ts gc` removes them once old enough); files of pieces whose
 * removal began and was not finished are reported apart, as awaiting it.
 *
 * Reading is paced to `bytesPerSecond`, so a scrub beside a serving process
 * leaves the disk to uploads and retrievals. The same function backs
 * `main.ts scrub` and the server's periodic scrub.
 */
import { createHash } from "node:crypto";
import { toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import type { CatalogRecords, PieceRecord } from "../domain/catalog_records.ts";
import { parseCid } from "../kernel/piece_cid/cid_codec.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { createCidVerifier } from "../kernel/piece_cid/verify.ts";
import type { PieceStore } from "../driver/driver.ts";
import { eachPiece } from "./piece_pages.ts";
import { RatePacer } from "./rate_pacer.ts";

/** Rows read from the database at a time, so a large catalog never sits in memory. */
const PAGE_SIZE = 256;
/** A key no piece has: its stat tells "the store is there" from "the store is gone". */
const PROBE_KEY = "scrubprobe";

export type ScrubRecords = Pick<
  CatalogRecords,
  "piecesAfter" | "getPiece" | "markPieceCorrupt" | "clearPieceCorrupt" | "setPieceSha256"
>;

export interface ScrubOptions {
  store: PieceStore;
  records: ScrubRecords;
  bytesPerSecond: number;
  /** Workers for piece-cid hashing; null hashes on this thread. */
  hashPool: HashWorkerPool | null;
  clock: Clock;
  /** Aborting stops the scrub between two reads; it then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Told about every piece that fails, as it is found (the server stops caching it). */
  onFailure?(failure: ScrubFailure): void;
}

export interface ScrubFailure {
  cid: string;
  /** What is wrong, for people: "missing", "sha256 mismatch", "3 bytes stored, 4 recorded", … */
  problem: string;
  /** When the piece was marked corrupt (now, or by an earlier scrub). */
  markedAt: string;
}

export interface ScrubReport {
  /** Piece rows checked. */
  pieces: number;
  /** Bytes read. */
  bytes: number;
  seconds: number;
  /** Pieces whose bytes passed every check there was to make. */
  passed: number;
  /** Of those, opaque pieces with no recorded digest: only their size could be checked. */
  sizeOnly: number;
  /** Files whose bytes do not verify (marked corrupt). */
  corrupt: ScrubFailure[];
  /** Rows whose file is gone (marked corrupt too). */
  missing: ScrubFailure[];
  /** Pieces marked corrupt before that verify again: the mark is cleared. */
  cleared: string[];
  /** Pieces a sweep removed (or is removing): their rows name no bytes to check. */
  removed: number;
  /** Files in the store that no row names. */
  orphans: string[];
  /** Files of pieces whose removal a sweep began: the next sweep deletes them. */
  awaitingRemoval: string[];
}

type Verdict =
  | { ok: true; sha256: string; sizeOnly: boolean }
  | { ok: false; missing: boolean; problem: string };

export async function scrubPieces(options: ScrubOptions): Promise<ScrubReport> {
  const started = performance.now();
  const pacer = new RatePacer({ perSecond: options.bytesPerSecond });
  const report: ScrubReport = {
    pieces: 0,
    bytes: 0,
    seconds: 0,
    passed: 0,
    sizeOnly: 0,
    corrupt: [],
    missing: [],
    cleared: [],
    removed: 0,
    orphans: [],
    awaitingRemoval: [],
  };
  for await (const piece of eachPiece(options.records, PAGE_SIZE)) {
    options.signal?.throwIfAborted();
    if (piece.removedAt !== null) {
      report.removed++;
      continue;
    }
    const verdict = await checkPiece(piece, options, pacer, report);
    report.pieces++;
    await record(piece, verdict, options, report);
  }
  Object.assign(report, await findOrphans(options));
  report.seconds = Math.round(performance.now() - started) / 1000;
  return report;
}

/** Writes what a piece's check found to the database and the report. */
async function record(
  piece: PieceRecord,
  verdict: Verdict,
  options: ScrubOptions,
  report: ScrubReport,
): Promise<void> {
  const { records } = options;
  if (verdict.ok) {
    report.passed++;
    if (verdict.sizeOnly) report.sizeOnly++;
    if (piece.sha256 === null) await records.setPieceSha256(piece.cid, verdict.sha256);
    if (piece.corruptAt !== null && await records.clearPieceCorrupt(piece.cid, piece.corruptAt)) {
      report.cleared.push(piece.cid);
    }
    return;
  }
  let markedAt = piece.corruptAt;
  if (markedAt === null) {
    const now = toRfc3339(options.clock.now());
    // False only if another scrub marked it meanwhile: its mark stands.
    markedAt = await records.markPieceCorrupt(piece.cid, now, verdict.problem)
      ? now
      : (await records.getPiece(piece.cid))?.corruptAt ?? now;
  }
  const failure: ScrubFailure = { cid: piece.cid, problem: verdict.problem, markedAt };
  (verdict.missing ? report.missing : report.corrupt).push(failure);
  options.onFailure?.(failure);
}

async function checkPiece(
  piece: PieceRecord,
  options: ScrubOptions,
  pacer: RatePacer,
  report: ScrubReport,
): Promise<Verdict> {
  const { store, signal } = options;
  const verifier = createCidVerifier(parseCid(piece.cid), options.hashPool);
  const hash = createHash("sha256");
  let size = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  try {
    const opened = await store.open(piece.cid).catch((error) => unreadable(error, options));
    if (opened === null) return { ok: false, missing: true, problem: "missing: no file" };
    if ("problem" in opened) return opened;
    reader = opened.body.getReader();
    while (true) {
      const next = await reader.read().catch((error) => unreadable(error, options));
      if ("problem" in next) return next;
      if (next.done) break;
      size += next.value.byteLength;
      report.bytes += next.value.byteLength;
      hash.update(next.value);
      const hashing = verifier?.onChunk(next.value);
      if (hashing) await hashing;
      await pacer.take(next.value.byteLength, signal);
    }
  } finally {
    // Closes the file when the loop ended early (an abort, a failed read).
    await reader?.cancel().catch(() => {});
  }
  if (size !== piece.size) {
    return { ok: false, missing: false, problem: `${size} bytes stored, ${piece.size} recorded` };
  }
  const sha256 = hash.digest("hex");
  if (piece.sha256 !== null && sha256 !== piece.sha256) {
    return { ok: false, missing: false, problem: "sha256 mismatch" };
  }
  if (verifier && !await verifier.matches({ computeSha256: () => Promise.resolve(sha256) })) {
    return { ok: false, missing: false, problem: "cid mismatch" };
  }
  return { ok: true, sha256, sizeOnly: verifier === null && piece.sha256 === null };
}

/**
 * A file that cannot be read (a bad sector) is that piece's problem; a store
 * that is gone is everyone's, and stops the scrub before it marks every piece.
 */
async function unreadable(
  error: unknown,
  options: ScrubOptions,
): Promise<{ ok: false; missing: false; problem: string }> {
  if (options.signal?.aborted) throw options.signal.reason;
  // Out of file descriptors or memory says nothing about the piece: stop, mark nothing.
  if (isResourceExhaustion(error)) throw error;
  const storeThere = await options.store.stat(PROBE_KEY).then(() => true, () => false);
  if (!storeThere) throw error;
  return { ok: false, missing: false, problem: `unreadable: ${(error as Error).message}` };
}

/** EMFILE, ENFILE (os error 24, 23) and ENOMEM (12): this process's trouble, not the disk's. */
function isResourceExhaustion(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (code === "EMFILE" || code === "ENFILE" || code === "ENOMEM") return true;
  return /\(os error (24|23|12)\)/.test(String((error as Error)?.message ?? error));
}

/**
 * Keys in the store that no row names, or only a removed piece's row. An
 * upload commits its file a moment before its row, so candidates are looked
 * up again once the listing is done.
 */
async function findOrphans(
  options: ScrubOptions,
): Promise<Pick<ScrubReport, "orphans" | "awaitingRemoval">> {
  const unnamed = async (key: string) => {
    const piece = await options.records.getPiece(key);
    return piece === null ? "orphan" : piece.removedAt !== null ? "removed" : null;
  };
  const candidates: string[] = [];
  for await (const key of options.store.list()) {
    options.signal?.throwIfAborted();
    if (await unnamed(key) !== null) candidates.push(key);
  }
  const found = { orphans: [] as string[], awaitingRemoval: [] as string[] };
  for (const key of candidates) {
    const kind = await unnamed(key);
    if (kind === "orphan") found.orphans.push(key);
    if (kind === "removed") found.awaitingRemoval.push(key);
  }
  found.orphans.sort();
  found.awaitingRemoval.sort();
  return found;
}
