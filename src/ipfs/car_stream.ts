/**
 * Checks a CAR (v1, or v2 with its index) while an upload streams it, in the
 * upload's per-chunk hook: every block's bytes must hash to its cid (sha2-256
 * or identity), and each block's place in the CAR is reported for the block
 * index.
 *
 * Why a push parser of our own and not @ipld/car's readers: the upload hands
 * out views of two reused buffers, which @ipld/car keeps references to (and
 * then reads overwritten bytes); its readers buffer up to the end of the body
 * when a length lies; they do not verify; and they ran at about 60% of this
 * one's speed, which hashes each block as its bytes pass (one SHA-256 pass
 * over the body, no copy of a large block). @ipld/dag-cbor reads the header;
 * each block's cid and the check of its bytes are car_block.ts's.
 *
 * Every length is bounded before anything is buffered; only varints, the
 * header (<= 64 KiB) and a cid (<= 128 bytes) are ever copied.
 */
import { CID } from "multiformats/cid";
import { decode as decodeCbor } from "@ipld/dag-cbor";
import { CarFormatError } from "./car_errors.ts";
import { CarBlockCheck, MAX_CID_BYTES } from "./car_block.ts";

export { CarFormatError } from "./car_errors.ts";
export type { CarProblem } from "./car_errors.ts";

/**
 * One verified block, where it sits in the CAR's bytes. Handed to onBlock as
 * a reused object whose multihash is a view of the parser's scratch: copy
 * what is kept (a million blocks made a million cid objects to collect).
 */
export interface CarBlock {
  /** The block's multihash (code, length, digest): valid during the call only. */
  multihash: Uint8Array;
  /** Offset of the block's bytes (after its length and cid) from the start of the CAR. */
  offset: number;
  length: number;
}

export interface CarSummary {
  version: 1 | 2;
  roots: CID[];
  blocks: number;
}

export interface CarStreamLimits {
  /** Largest header (its dag-cbor bytes) accepted; default 64 KiB. */
  maxHeaderBytes?: number;
  /** Largest block accepted; default 4 MiB. */
  maxBlockBytes?: number;
  /** Largest identity block (data inlined in its cid) accepted; default 4 KiB. */
  maxIdentityBytes?: number;
  /** Most blocks one CAR may hold (the block index of an upload is kept in memory). */
  maxBlocks?: number;
}

export const DEFAULT_MAX_BLOCK_BYTES = 4 * 1024 * 1024;
const MAX_VARINT_BYTES = 9; // up to 2^63; anything longer is malformed
const V2_PRAGMA = Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02);
const V2_HEADER_BYTES = 40;

type State =
  | "headerLength"
  | "header"
  | "v2Header"
  | "v2Padding"
  | "innerHeaderLength"
  | "innerHeader"
  | "sectionLength"
  | "cid"
  | "block"
  | "trailer";

export class CarStreamVerifier {
  readonly #limits: Required<CarStreamLimits>;
  readonly #onBlock: (block: CarBlock) => void;
  #state: State = "headerLength";
  #pos = 0; // offset of the next byte from the start of the CAR
  #buf = new Uint8Array(64); // scratch for varints, the header and a cid (never a block)
  #have = 0;
  #need = 0;
  #version: 1 | 2 = 1;
  #roots: CID[] = [];
  #blocks = 0;
  #dataOffset = 0; // CARv2: where the inner CARv1 starts
  #dataEnd = Infinity; // CARv2: sections stop here
  #sectionOffset = 0;
  #sectionLength = 0;
  /** The block under way: its cid (in #buf) and the check of its bytes. */
  readonly #check = new CarBlockCheck();
  #blockOffset = 0;
  #blockLength = 0;
  #blockLeft = 0;
  readonly #block: CarBlock = { multihash: new Uint8Array(0), offset: 0, length: 0 };

  constructor(options: { limits?: CarStreamLimits; onBlock: (block: CarBlock) => void }) {
    this.#limits = {
      maxHeaderBytes: options.limits?.maxHeaderBytes ?? 64 * 1024,
      maxBlockBytes: options.limits?.maxBlockBytes ?? DEFAULT_MAX_BLOCK_BYTES,
      maxIdentityBytes: options.limits?.maxIdentityBytes ?? 4096,
      maxBlocks: options.limits?.maxBlocks ?? Infinity,
    };
    this.#onBlock = options.onBlock;
  }

  /** Feeds the next bytes; throws CarFormatError at the first bad one. Keeps no reference. */
  push(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      switch (this.#state) {
        case "block": {
          const n = Math.min(this.#blockLeft, chunk.length - i);
          this.#blockBytes(chunk, i, i + n, false);
          i += n;
          break;
        }
        case "trailer": // a CARv2's padding and index: stored, not read
          this.#pos += chunk.length - i;
          i = chunk.length;
          break;
        case "v2Padding": {
          const n = Math.min(this.#dataOffset - this.#pos, chunk.length - i);
          i += n;
          this.#pos += n;
          if (this.#pos === this.#dataOffset) this.#startVarint("innerHeaderLength");
          break;
        }
        default:
          i += this.#fill(chunk, i);
      }
    }
  }

  /** At the end of the body: throws if the CAR stopped inside a header or a section. */
  end(): CarSummary {
    if (this.#state === "sectionLength" && this.#have === 0 && this.#pos >= this.#dataEnd) {
      this.#state = "trailer";
    }
    const clean = this.#state === "trailer" ||
      (this.#state === "sectionLength" && this.#have === 0 && this.#dataEnd === Infinity);
    if (!clean) throw new CarFormatError("malformed", `The CAR ends early, at byte ${this.#pos}`);
    return { version: this.#version, roots: this.#roots, blocks: this.#blocks };
  }

  // Varints byte by byte; the header, the CARv2 header and a cid into #buf.
  #fill(chunk: Uint8Array, i: number): number {
    const state = this.#state;
    if (state === "headerLength" || state === "innerHeaderLength" || state === "sectionLength") {
      if (state === "sectionLength" && this.#have === 0 && this.#pos >= this.#dataEnd) {
        this.#state = "trailer";
        return 0;
      }
      const byte = chunk[i];
      this.#buf[this.#have++] = byte;
      this.#pos++;
      if (byte & 0x80) {
        if (this.#have >= MAX_VARINT_BYTES) {
          throw new CarFormatError("malformed", `A varint at byte ${this.#pos} is too long`);
        }
        return 1;
      }
      const value = readLeb128(this.#buf, this.#have);
      const start = this.#pos - this.#have;
      this.#have = 0;
      this.#onVarint(value, start);
      return 1;
    }
    const n = Math.min(this.#need - this.#have, chunk.length - i);
    this.#buf.set(chunk.subarray(i, i + n), this.#have);
    this.#have += n;
    this.#pos += n;
    if (this.#have === this.#need) this.#onFilled();
    return n;
  }

  #startVarint(state: State) {
    this.#state = state;
    this.#have = 0;
  }

  #want(state: State, bytes: number) {
    if (this.#buf.length < bytes) this.#buf = new Uint8Array(bytes);
    this.#state = state;
    this.#need = bytes;
    this.#have = 0;
  }

  #onVarint(value: number, start: number) {
    if (!Number.isSafeInteger(value)) {
      throw new CarFormatError("malformed", `The length at byte ${start} is out of range`);
    }
    if (this.#state === "headerLength" || this.#state === "innerHeaderLength") {
      if (value === 0 || value > this.#limits.maxHeaderBytes) {
        throw new CarFormatError(
          "malformed",
          `The CAR header's length (${value}) is not accepted (at most ${this.#limits.maxHeaderBytes})`,
        );
      }
      if (this.#pos + value > this.#dataEnd) {
        throw new CarFormatError("malformed", "The CAR header runs past the CARv2 data size");
      }
      this.#want(this.#state === "headerLength" ? "header" : "innerHeader", value);
      return;
    }
    if (value === 0) throw new CarFormatError("malformed", `Empty CAR section at byte ${start}`);
    if (value > this.#limits.maxBlockBytes + MAX_CID_BYTES) {
      throw new CarFormatError(
        "malformed",
        `The CAR section at byte ${start} claims ${value} bytes, more than a block may have ` +
          `(${this.#limits.maxBlockBytes})`,
      );
    }
    if (this.#pos + value > this.#dataEnd) {
      throw new CarFormatError("malformed", "A CAR section runs past the CARv2 data size");
    }
    if (this.#blocks >= this.#limits.maxBlocks) {
      throw new CarFormatError(
        "too_many_blocks",
        `The CAR has more than ${this.#limits.maxBlocks} blocks, more than one upload may index`,
      );
    }
    this.#sectionOffset = start;
    this.#sectionLength = value;
    this.#want("cid", Math.min(value, MAX_CID_BYTES));
  }

  #onFilled() {
    const bytes = this.#buf.subarray(0, this.#have);
    switch (this.#state) {
      case "header":
        if (isV2Pragma(bytes)) {
          this.#version = 2;
          this.#want("v2Header", V2_HEADER_BYTES);
        } else {
          this.#acceptV1Header(bytes);
        }
        return;
      case "v2Header":
        this.#acceptV2Header(bytes);
        return;
      case "innerHeader":
        this.#acceptV1Header(bytes);
        return;
      case "cid":
        this.#acceptCid(bytes);
        return;
    }
  }

  #acceptV2Header(bytes: Uint8Array) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const u64 = (at: number) => {
      const value = view.getBigUint64(at, true);
      if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new CarFormatError("malformed", "A CARv2 header offset is out of range");
      }
      return Number(value);
    };
    const dataOffset = u64(16);
    const dataSize = u64(24);
    const indexOffset = u64(32);
    if (dataOffset < this.#pos || dataSize === 0) {
      throw new CarFormatError("malformed", "The CARv2 header's data offset or size is impossible");
    }
    if (indexOffset !== 0 && indexOffset < dataOffset + dataSize) {
      throw new CarFormatError("malformed", "The CARv2 index overlaps its data");
    }
    this.#dataOffset = dataOffset;
    this.#dataEnd = dataOffset + dataSize;
    if (this.#pos === dataOffset) this.#startVarint("innerHeaderLength");
    else this.#state = "v2Padding";
  }

  #acceptV1Header(bytes: Uint8Array) {
    let header: { version?: unknown; roots?: unknown } | null;
    try {
      header = decodeCbor(bytes);
    } catch (error) {
      throw new CarFormatError(
        "malformed",
        `The CAR header is not dag-cbor: ${(error as Error).message}`,
      );
    }
    if (header?.version !== 1 || !Array.isArray(header.roots)) {
      throw new CarFormatError(
        "malformed",
        "The CAR header must be {version: 1, roots: [...]} (or a CARv2 pragma)",
      );
    }
    const roots = header.roots.map((root) => CID.asCID(root));
    if (roots.some((root) => root === null)) {
      throw new CarFormatError("malformed", "A root in the CAR header is not a cid");
    }
    this.#roots = roots as CID[];
    this.#startVarint("sectionLength");
  }

  #acceptCid(bytes: Uint8Array) {
    const check = this.#check;
    check.readCid(bytes, this.#sectionOffset);
    const cidEnd = check.cidEnd;
    const blockLength = this.#sectionLength - cidEnd;
    this.#blockOffset = this.#pos - (bytes.length - cidEnd);
    this.#blockLength = blockLength;
    this.#blockLeft = blockLength;
    check.start(blockLength, this.#limits.maxIdentityBytes);
    this.#state = "block";
    // The first bytes of the block came into #buf with the cid: ours, so hash them now.
    this.#blockBytes(bytes, cidEnd, Math.min(bytes.length, cidEnd + blockLength), true);
  }

  /** Bytes of the block under way: bytes[from, to). */
  #blockBytes(bytes: Uint8Array, from: number, to: number, alreadyCounted: boolean) {
    this.#check.feed(bytes, from, to);
    const n = to - from;
    if (!alreadyCounted) this.#pos += n;
    this.#blockLeft -= n;
    if (this.#blockLeft === 0) this.#finishBlock();
  }

  #finishBlock() {
    const check = this.#check;
    check.finish();
    this.#blocks++;
    const block = this.#block;
    block.multihash = this.#buf.subarray(check.multihashAt, check.cidEnd);
    block.offset = this.#blockOffset;
    block.length = this.#blockLength;
    this.#onBlock(block);
    this.#startVarint("sectionLength");
  }
}

function isV2Pragma(header: Uint8Array): boolean {
  // The pragma's first byte is the header length (10), already read as the varint.
  return header.length + 1 === V2_PRAGMA.length &&
    V2_PRAGMA.subarray(1).every((byte, k) => byte === header[k]);
}

/** The unsigned LEB128 varint in bytes[0, length) (at most 9 bytes; the caller bounds it). */
function readLeb128(bytes: Uint8Array, length: number): number {
  let value = 0;
  for (let k = 0, scale = 1; k < length; k++, scale *= 128) value += (bytes[k] & 0x7f) * scale;
  return value;
}
