/**
 * The blocks the service holds, by cid, for the IPFS gateway: found through
 * the block index (the blocks of CAR uploads) and read from their piece by
 * offset through the storage driver, so one block costs one ranged read
 * whatever the size of the CAR around it.
 *
 * Besides the index: an identity cid holds its block in itself, and a piece
 * uploaded under a raw sha2-256 cid (`bafkrei…`, checked against its bytes
 * at upload) is itself one block, whichever codec a client names it by.
 *
 * Blocks are looked up by multihash, as IPFS clients do: CIDv0 (`Qm…`) and
 * CIDv1 of any codec name the same bytes when their multihash is the same.
 * A block counts only while a piece holding it is stored and not marked
 * corrupt (the index query's rule, domain/catalog_records.ts BlockRecords); a removal
 * (garbage collection) takes its piece's index rows with it, and a raw
 * piece that is being removed or was removed is no block either.
 */
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import type { BlockRecords } from "../domain/catalog_records.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { OpenOptions, PieceStore } from "../driver/driver.ts";
import { IDENTITY_MULTIHASH, SHA2_256_MULTIHASH } from "./multihash.ts";

/** Where a block's bytes are: in its own cid, or a range of a stored piece. */
export type LocatedBlock =
  | { kind: "inline"; length: number; bytes: Uint8Array }
  | { kind: "stored"; length: number; pieceCid: string; offset: number };

export interface BlockSourceOptions {
  records: BlockRecords;
  catalog: PieceCatalog;
  store: PieceStore;
}

export class BlockSource {
  readonly #options: BlockSourceOptions;

  constructor(options: BlockSourceOptions) {
    this.#options = options;
  }

  /** Where the block named by cid is, or null when the service does not hold it. */
  async locate(cid: CID): Promise<LocatedBlock | null> {
    const { multihash } = cid;
    if (multihash.code === IDENTITY_MULTIHASH) {
      return { kind: "inline", length: multihash.digest.length, bytes: multihash.digest };
    }
    const indexed = await this.#options.records.findBlock(multihash.bytes);
    if (indexed) return { kind: "stored", ...indexed };
    if (multihash.code !== SHA2_256_MULTIHASH) return null;
    // A raw upload under its own sha2-256 cid: the piece is the block.
    const piece = await this.#options.catalog.getPiece(
      CID.createV1(raw.code, multihash).toString(),
    );
    if (piece === null || piece.corruptAt !== null || piece.removedAt !== null) return null;
    return { kind: "stored", length: piece.size, pieceCid: piece.cid, offset: 0 };
  }

  /**
   * The block's bytes as a stream; null when its piece is gone from the store
   * since it was located (the caller answers as if it were never held).
   */
  async open(
    block: LocatedBlock,
    options: OpenOptions = {},
  ): Promise<ReadableStream<Uint8Array> | null> {
    if (block.kind === "inline") return ReadableStream.from([block.bytes]);
    if (block.length === 0) return ReadableStream.from([]);
    const range = { offset: block.offset, length: block.length };
    const opened = await this.#options.store.open(block.pieceCid, range, options);
    return opened?.body ?? null;
  }

  /** The block's bytes, whole (for blocks whose links are read); null as for open. */
  async read(block: LocatedBlock): Promise<Uint8Array | null> {
    if (block.kind === "inline") return block.bytes;
    const body = await this.open(block);
    if (body === null) return null;
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    // A piece shorter than the index says: never hand out a guess.
    return bytes.length === block.length ? bytes : null;
  }
}
