/**
 * One CAR block under way: its cid, read from the first bytes of its section,
 * and the check of its bytes against it as they pass (car_stream.ts feeds
 * it). The cid's bytes stay in the parser's scratch; this keeps where its
 * multihash and digest lie in them.
 *
 * Why the common cids (v0, v1 of sha2-256 or identity) are read here and
 * small blocks hashed by small_sha256.ts: a million 8-byte blocks made a
 * million CID objects and node:crypto hashes (one created, fed and digested
 * into a new Buffer per block), 5.6 s of the serving thread's CPU for the
 * check of one CAR and collections of 30-40 ms; read in place, 1.2 s. Any
 * other cid is read by multiformats, which refuses what it refused before.
 */
import { createHash, type Hash } from "node:crypto";
import { CID } from "multiformats/cid";
import { CarFormatError } from "./car_errors.ts";
import { IDENTITY_MULTIHASH, multihashName, SHA2_256_MULTIHASH } from "./multihash.ts";
import { sha256Matches } from "./small_sha256.ts";

/** Most bytes of a section read as its cid (a CIDv1 with a sha2-512 digest is 68 bytes). */
export const MAX_CID_BYTES = 128;
/**
 * Blocks up to this size are hashed in one piece by small_sha256.ts (their
 * bytes gathered in a scratch buffer), larger ones stream through node:crypto;
 * measured: 0.4 µs against 3 µs for 8 bytes, even at about 512.
 */
const SMALL_BLOCK_BYTES = 512;

export class CarBlockCheck {
  /** Where, in the cid's bytes, the multihash starts, its digest starts, and the cid ends. */
  multihashAt = 0;
  digestAt = 0;
  cidEnd = 0;
  #code = 0;
  #digestSize = 0;
  #cid: Uint8Array = new Uint8Array(0);
  #sectionOffset = 0;
  #hash: Hash | null = null;
  #small: Uint8Array | null = null; // a small sha2-256 block's bytes, gathered
  #smallHave = 0;
  #identityAt = 0;
  #smallScratch: Uint8Array | null = null;

  /** Reads the cid at the start of `bytes` (kept, not copied, until the block ends). */
  readCid(bytes: Uint8Array, sectionOffset: number): void {
    this.#cid = bytes;
    this.#sectionOffset = sectionOffset;
    if (!this.#readCommon(bytes)) this.#readAny(bytes);
  }

  /** Starts the block's check, after its cid: throws for a hash or a length it cannot accept. */
  start(blockLength: number, maxIdentityBytes: number): void {
    this.#hash = null;
    this.#small = null;
    this.#smallHave = 0;
    this.#identityAt = 0;
    const code = this.#code;
    if (code === SHA2_256_MULTIHASH) {
      if (this.#digestSize !== 32) {
        throw new CarFormatError(
          "malformed",
          `Block ${this.#text()}: a sha2-256 digest has 32 bytes`,
        );
      }
      if (blockLength <= SMALL_BLOCK_BYTES) {
        this.#small = this.#smallScratch ??= new Uint8Array(SMALL_BLOCK_BYTES);
      } else {
        this.#hash = createHash("sha256");
      }
    } else if (code === IDENTITY_MULTIHASH) {
      if (blockLength > maxIdentityBytes || blockLength !== this.#digestSize) {
        throw new CarFormatError(
          "block_mismatch",
          `Block ${this.#text()} does not match its identity cid`,
        );
      }
    } else {
      throw new CarFormatError(
        "unsupported_hash",
        `Block ${this.#text()} uses the ${multihashName(code)} multihash (0x${
          code.toString(16)
        }); ` +
          "only sha2-256 and identity are accepted",
      );
    }
  }

  /** The block's bytes[from, to). */
  feed(bytes: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (this.#small !== null) {
      this.#small.set(bytes.subarray(from, to), this.#smallHave);
      this.#smallHave += n;
    } else if (this.#hash) {
      this.#hash.update(bytes.subarray(from, to));
    } else {
      const cid = this.#cid;
      const digestAt = this.digestAt + this.#identityAt;
      for (let k = 0; k < n; k++) {
        if (cid[digestAt + k] !== bytes[from + k]) {
          throw new CarFormatError(
            "block_mismatch",
            `Block ${this.#text()} does not match its identity cid`,
          );
        }
      }
      this.#identityAt += n;
    }
  }

  /** After the block's last byte: throws unless its bytes hash to its cid. */
  finish(): void {
    const matches = this.#small !== null
      ? sha256Matches(this.#small, 0, this.#smallHave, this.#cid, this.digestAt)
      : this.#hash === null ||
        equalAt(new Uint8Array(this.#hash.digest()), this.#cid, this.digestAt);
    this.#hash = null;
    this.#small = null;
    if (!matches) {
      throw new CarFormatError(
        "block_mismatch",
        `Block ${this.#text()} at byte ${this.#sectionOffset} does not hash to its cid`,
      );
    }
  }

  /** v0, and v1 of sha2-256 or identity, read in place; false for any other. */
  #readCommon(bytes: Uint8Array): boolean {
    let at: number;
    if (bytes[0] === 0x12 && bytes[1] === 0x20) {
      at = 0; // CIDv0: the multihash alone
    } else if (bytes[0] === 0x01) {
      at = 1;
      for (let n = 0; n < 4 && at < bytes.length && bytes[at] & 0x80; n++) at++;
      if (at >= bytes.length || bytes[at] & 0x80) return false;
      at++; // past the codec
    } else {
      return false;
    }
    const code = bytes[at];
    if (code !== SHA2_256_MULTIHASH && code !== IDENTITY_MULTIHASH) return false;
    const size = bytes[at + 1]; // one varint byte: a cid is read in 128 bytes at most
    const digestAt = at + 2;
    if (size === undefined || size & 0x80 || digestAt + size > bytes.length) return false;
    this.#set(at, code, digestAt, size);
    return true;
  }

  #readAny(bytes: Uint8Array): void {
    let cid: CID;
    let rest: Uint8Array;
    try {
      [cid, rest] = CID.decodeFirst(bytes);
    } catch (error) {
      throw new CarFormatError(
        "malformed",
        `Bad block cid at byte ${this.#sectionOffset}: ${(error as Error).message}`,
      );
    }
    const cidEnd = bytes.length - rest.length;
    const { multihash } = cid;
    this.#set(
      cidEnd - multihash.bytes.length,
      multihash.code,
      cidEnd - multihash.digest.length,
      multihash.size,
    );
  }

  #set(multihashAt: number, code: number, digestAt: number, digestSize: number): void {
    this.multihashAt = multihashAt;
    this.#code = code;
    this.digestAt = digestAt;
    this.#digestSize = digestSize;
    this.cidEnd = digestAt + digestSize;
  }

  /** The block's cid as text, for a message. */
  #text(): string {
    try {
      return CID.decode(this.#cid.slice(0, this.cidEnd)).toString();
    } catch {
      return `at byte ${this.#sectionOffset}`;
    }
  }
}

/** True when `digest` equals expected[at, at + digest.length). */
function equalAt(digest: Uint8Array, expected: Uint8Array, at: number): boolean {
  for (let k = 0; k < digest.length; k++) if (digest[k] !== expected[at + k]) return false;
  return true;
}
