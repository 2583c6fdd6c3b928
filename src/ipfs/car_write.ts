/**
 * Writes a CARv1 as a stream of chunks: the header naming the roots, then a
 * section (length, cid, bytes) per block of a walk (dag_walk.ts). Blocks
 * whose bytes the walk read are sent from memory; raw blocks are streamed
 * from their piece, so a CAR answer holds one block in memory at most.
 */
import { varint } from "multiformats";
import type { CID } from "multiformats/cid";
import { encode as encodeCbor } from "@ipld/dag-cbor";
import type { BlockSource } from "./blocks.ts";
import { MissingBlockError } from "./dag_walk.ts";
import type { WalkedBlock } from "./dag_walk.ts";
import { IDENTITY_MULTIHASH } from "./multihash.ts";

/** The CARv1 header: its length, then {version: 1, roots} in dag-cbor. */
export function carHeader(roots: CID[]): Uint8Array {
  return withLength(encodeCbor({ version: 1, roots }), []);
}

/** The CAR bytes of a walk, header first; identity blocks are left out (the spec's MUST). */
export async function* carChunks(
  source: BlockSource,
  roots: CID[],
  blocks: AsyncIterable<WalkedBlock>,
): AsyncGenerator<Uint8Array> {
  yield carHeader(roots);
  for await (const block of blocks) {
    if (block.cid.multihash.code === IDENTITY_MULTIHASH) continue;
    const head = sectionHead(block.cid, block.located.length);
    if (block.bytes !== null) {
      yield concat(head, block.bytes);
      continue;
    }
    yield head;
    const body = await source.open(block.located);
    if (body === null) throw new MissingBlockError(`Block ${block.cid} is not held`);
    let sent = 0;
    for await (const chunk of body) {
      sent += chunk.length;
      yield chunk;
    }
    if (sent !== block.located.length) {
      throw new MissingBlockError(`Block ${block.cid} was cut short in its piece`);
    }
  }
}

/** A section's start: varint(cid length + block length), then the cid's bytes. */
function sectionHead(cid: CID, blockLength: number): Uint8Array {
  return withLength(cid.bytes, [blockLength]);
}

/** varint(bytes.length + sum of extra) followed by bytes. */
function withLength(bytes: Uint8Array, extra: number[]): Uint8Array {
  const total = bytes.length + extra.reduce((a, b) => a + b, 0);
  const prefix = varint.encodeTo(total, new Uint8Array(varint.encodingLength(total)));
  return concat(prefix, bytes);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
