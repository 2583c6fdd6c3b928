/// <reference lib="dom" />
/**
 * The bench's browser page: PieceCIDv2 of bytes made in the page, with the
 * client SDK on one hashing Worker, as the web page computes cids before an
 * upload. Exposed as globalThis.benchPieceCid for the bench to call.
 */
import { pieceCid } from "../../src/client/sdk/mod.ts";

/** The bench's pattern (scripts/bench_piece_cid.ts fills its payload alike). */
function pattern(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

let payload: Uint8Array<ArrayBuffer> | null = null;

/** Hashes `size` bytes on `workers` Workers; the time excludes making the bytes. */
async function benchPieceCid(size: number, workers: number) {
  if (payload?.length !== size) payload = pattern(size);
  const started = performance.now();
  const { cid } = await pieceCid(payload, { pool: workers });
  return { cid, ms: performance.now() - started };
}

(globalThis as unknown as { benchPieceCid: typeof benchPieceCid }).benchPieceCid = benchPieceCid;
