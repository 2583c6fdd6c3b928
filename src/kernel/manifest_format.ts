/**
 * The manifest of a split file: its one definition, for the SDK that writes
 * and follows it (client/sdk/manifest.ts) and the server that checks it at
 * upload and serves the whole file behind it (GET /f/{cid}).
 *
 * Serialised deterministically, so the same file split the same way always
 * gives the same bytes and so the same manifest cid (a re-run of an upload
 * finds its manifest stored): JSON.stringify (whose output the language
 * specifies exactly) of an object built in one fixed key order, no
 * whitespace, no trailing newline:
 *
 *   {"format":"storage-manifest","version":1,"name":"video.mp4","contentType":"video/mp4",
 *    "size":262144000,"sha256":"<64 hex>","pieces":[{"cid":"bafkzcib…","size":104857600},…]}
 *
 * Reading is strict about what it relies on (format, version, types, the
 * sizes adding up, a PieceCIDv2's own size agreeing with its entry) and
 * ignores fields it does not know. It imports only the cid format, the cid
 * parser and the slicer of long work (kernel/turns.ts), so both sides use it
 * without taking in each other's code.
 */
import { normalizeCid } from "./cid_format.ts";
import { parseCid } from "./piece_cid/cid_codec.ts";
import { inSlices } from "./turns.ts";

/** The Content-Type a manifest piece is stored with, which marks it as one. */
export const MANIFEST_CONTENT_TYPE = "application/vnd.storage-manifest+json";
export const MANIFEST_FORMAT = "storage-manifest";
export const MANIFEST_VERSION = 1;
/** Refuse to buffer a "manifest" larger than this (MAX_MANIFEST_PIECES fit). */
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
/** 100,000 pieces of the default 100 MiB are 9.5 TiB: far past any tier's file. */
export const MAX_MANIFEST_PIECES = 100_000;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;

/** A split file's table of contents, stored as its own piece (docs/client.md). */
export interface Manifest {
  format: "storage-manifest";
  version: 1;
  name: string | null;
  contentType: string;
  /** Bytes of the whole file. */
  size: number;
  /** Lowercase hex SHA-256 of the whole file. */
  sha256: string;
  /** The pieces in order; their sizes add up to `size`. */
  pieces: { cid: string; size: number }[];
}

/** Bytes that are not a manifest this code can follow; `reason` says why. */
export class ManifestFormatError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`not a valid manifest: ${reason}`);
    this.name = "ManifestFormatError";
    this.reason = reason;
  }
}

export function serializeManifest(manifest: Manifest): Uint8Array<ArrayBuffer> {
  const ordered = {
    format: manifest.format,
    version: manifest.version,
    name: manifest.name,
    contentType: manifest.contentType,
    size: manifest.size,
    sha256: manifest.sha256,
    pieces: manifest.pieces.map((piece) => ({ cid: piece.cid, size: piece.size })),
  };
  return new TextEncoder().encode(JSON.stringify(ordered));
}

/** Parses and checks manifest bytes; anything wrong is a ManifestFormatError. */
export function readManifest(bytes: Uint8Array): Manifest {
  const head = readHead(bytes);
  const check = pieceChecker();
  return finish(head, head.rawPieces.map(check));
}

/**
 * readManifest for the server, whose one thread serves everyone: the pieces
 * are checked in slices that yield (kernel/turns.ts). The largest manifest
 * allowed lists 100,000 pieces, about 0.2 s of cid parsing in one piece when
 * they are all different, and an anonymous client can make the server read
 * one (its first GET /f/, its upload).
 */
export async function readManifestInSlices(bytes: Uint8Array): Promise<Manifest> {
  const head = readHead(bytes);
  const check = pieceChecker();
  const pieces: { cid: string; size: number }[] = [];
  let index = 0;
  await inSlices(head.rawPieces, (entry) => pieces.push(check(entry, index++)));
  return finish(head, pieces);
}

function fail(why: string): never {
  throw new ManifestFormatError(why);
}

interface ManifestHead {
  raw: Record<string, unknown>;
  rawPieces: unknown[];
}

/** The JSON and every field but the pieces' entries, checked. */
function readHead(bytes: Uint8Array): ManifestHead {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return fail("not UTF-8 JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("not an object");
  const raw = value as Record<string, unknown>;
  if (raw.format !== MANIFEST_FORMAT) fail(`format is not "${MANIFEST_FORMAT}"`);
  if (raw.version !== MANIFEST_VERSION) fail(`version ${raw.version} is not supported`);
  if (raw.name !== null && typeof raw.name !== "string") fail("name is not a string or null");
  if (typeof raw.contentType !== "string" || raw.contentType === "") fail("contentType missing");
  if (!isSize(raw.size, 0)) fail("size is not a whole number of bytes");
  if (typeof raw.sha256 !== "string" || !SHA256_PATTERN.test(raw.sha256)) {
    fail("sha256 is not 64 lowercase hex digits");
  }
  if (!Array.isArray(raw.pieces) || raw.pieces.length === 0) fail("pieces is not a list");
  if ((raw.pieces as unknown[]).length > MAX_MANIFEST_PIECES) {
    fail(`more than ${MAX_MANIFEST_PIECES} pieces`);
  }
  return { raw, rawPieces: raw.pieces as unknown[] };
}

/**
 * Checks one entry of the pieces list. A cid listed again is not parsed
 * again: what its first check found (the size its cid fixes) is kept for the
 * one read, so a manifest of one piece listed 100,000 times costs one parse.
 */
function pieceChecker(): (entry: unknown, index: number) => { cid: string; size: number } {
  const fixedSizes = new Map<string, number>();
  return (entry, index) => {
    const piece = entry as Record<string, unknown> | null;
    if (typeof piece?.cid !== "string") fail(`piece ${index} has no valid cid`);
    const cid = piece!.cid as string;
    let fixed = fixedSizes.get(cid);
    if (fixed === undefined && normalizeCid(cid) !== cid) fail(`piece ${index} has no valid cid`);
    if (!isSize(piece!.size, 1)) fail(`piece ${index} has no valid size`);
    const size = piece!.size as number;
    if (fixed === undefined) {
      const parsed = parseCid(cid);
      // Every piece is checked while it streams: only a cid that fixes the bytes will do.
      if (parsed.kind !== "piece_v2") fail(`piece ${index} is not named by a PieceCIDv2`);
      fixed = parsed.payloadSize;
      fixedSizes.set(cid, fixed);
    }
    if (fixed !== size) {
      fail(`piece ${index} is listed as ${size} bytes but its cid fixes ${fixed}`);
    }
    return { cid, size };
  };
}

function finish(head: ManifestHead, pieces: { cid: string; size: number }[]): Manifest {
  const { raw } = head;
  const total = pieces.reduce((sum, piece) => sum + piece.size, 0);
  if (total !== raw.size) fail(`the pieces add up to ${total} bytes, not ${raw.size}`);
  return {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    name: raw.name as string | null,
    contentType: raw.contentType as string,
    size: raw.size as number,
    sha256: raw.sha256 as string,
    pieces,
  };
}

function isSize(value: unknown, min: number): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= min;
}

/**
 * How every manifest's bytes begin (serialisation has a fixed key order). A
 * download recognises a manifest by these bytes, not by its Content-Type:
 * whoever uploads a cid first sets its type, so a type is a claim anyone can
 * make about bytes that are not theirs, while the bytes are fixed by the cid.
 */
export const MANIFEST_PREFIX = new TextEncoder().encode(`{"format":"${MANIFEST_FORMAT}",`);

/** Whether a Content-Type marks the manifest piece of a split file (parameters ignored). */
export function isManifestType(contentType: string | null): boolean {
  if (contentType === null) return false;
  return contentType.split(";")[0].trim().toLowerCase() === MANIFEST_CONTENT_TYPE;
}
