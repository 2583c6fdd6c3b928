/**
 * A block's links read straight from its bytes, without decoding it: for the
 * gateway's count of a DAG (dag_walk.ts countDagBlocks), which runs before
 * every CAR answer and may meet nodes of a thousand links each. Decoding such
 * a node builds a CID object (and its digest, and views) per link: 100 nodes
 * of 1,000 links, the count an anonymous client can ask for four times at
 * once, took 200-250 ms of the one serving thread in dag-cbor's decoder
 * alone. Here a link is a range of the block's bytes, and a raw leaf never
 * becomes an object.
 *
 * Only what the count needs is read: dag-cbor's tag 42 (a CID as a byte
 * string after a 0x00 prefix) and dag-pb's PBNode.Links[].Hash and Data. A
 * block these readers cannot follow (an indefinite length, a truncated item,
 * a field out of place) makes them say so (false), and the caller decodes it
 * the usual way, which refuses what is malformed.
 */
import { RAW_CODEC, readVarint } from "../kernel/piece_cid/cid_codec.ts";
import { IDENTITY_MULTIHASH } from "./multihash.ts";

/** Called with each link's CID bytes: block[start, end). */
export type OnLink = (block: Uint8Array, start: number, end: number) => void;

const CID_TAG = 42;

/** The links of a dag-cbor block, in the order its bytes list them; false if it cannot be read here. */
export function scanCborLinks(block: Uint8Array, onLink: OnLink): boolean {
  let at = 0;
  let items = 1; // items still to read at this point, nested containers included
  let linkNext = false;
  while (items > 0) {
    if (at >= block.length) return false;
    const initial = block[at++];
    const major = initial >> 5;
    const info = initial & 0x1f;
    let argument: number;
    if (info < 24) {
      argument = info;
    } else if (info <= 27) {
      const size = 1 << (info - 24);
      if (at + size > block.length) return false;
      argument = 0;
      for (let i = 0; i < size; i++) argument = argument * 256 + block[at + i];
      at += size;
    } else {
      return false; // indefinite lengths and reserved values are not DAG-CBOR
    }
    items--;
    if (linkNext && major !== 2) return false;
    switch (major) {
      case 0:
      case 1:
      case 7: // integers, floats and simple values: the argument was all of it
        break;
      case 2:
      case 3:
        if (at + argument > block.length) return false;
        if (linkNext) {
          if (argument < 2 || block[at] !== 0x00) return false;
          onLink(block, at + 1, at + argument);
          linkNext = false;
        }
        at += argument;
        break;
      case 4:
        items += argument;
        break;
      case 5:
        items += 2 * argument;
        break;
      case 6:
        if (argument === CID_TAG) linkNext = true;
        items++; // the tagged item
        break;
    }
    if (!Number.isSafeInteger(items)) return false;
  }
  return at === block.length;
}

/**
 * The links of a dag-pb block (PBNode.Links[].Hash, in order) and its Data;
 * null if it cannot be read here.
 */
export function scanPbLinks(block: Uint8Array, onLink: OnLink): { data: Uint8Array | null } | null {
  let at = 0;
  let data: Uint8Array | null = null;
  while (at < block.length) {
    const key = block[at++];
    if (key !== 0x0a && key !== 0x12) return null; // only Data (1) and Links (2), length-delimited
    const length = readVarint(block, at);
    if (length === null) return null;
    at = length.next;
    const end = at + length.value;
    if (end > block.length) return null;
    if (key === 0x0a) {
      data = block.subarray(at, end);
    } else if (!scanPbLink(block, at, end, onLink)) {
      return null;
    }
    at = end;
  }
  return { data };
}

/** One PBLink: its Hash (field 1) given to onLink; Name (2) and Tsize (3) skipped. */
function scanPbLink(block: Uint8Array, start: number, end: number, onLink: OnLink): boolean {
  let at = start;
  let found = false;
  while (at < end) {
    const key = block[at++];
    if (key === 0x18) { // Tsize, a varint
      const size = readVarint(block, at);
      if (size === null) return false;
      at = size.next;
      continue;
    }
    if (key !== 0x0a && key !== 0x12) return false;
    const length = readVarint(block, at);
    if (length === null || length.next + length.value > end) return false;
    if (key === 0x0a) {
      onLink(block, length.next, length.next + length.value);
      found = true;
    }
    at = length.next + length.value;
  }
  return found && at === end;
}

/**
 * The count's key of a link that is a raw leaf (raw codec, not inline): 48
 * bits of its digest as one number; null for any other link (a node to read,
 * an inline block, a CIDv0) or bytes that are not a CIDv1.
 */
export function rawLeafKey(block: Uint8Array, start: number, end: number): number | null {
  // The usual leaf (CIDv1, raw, a hash code and a digest length under 128, e.g. sha2-256) in four
  // bytes, read in place: no object per link.
  if (
    block[start] === 1 && block[start + 1] === RAW_CODEC && block[start + 2] < 0x80 &&
    block[start + 2] !== IDENTITY_MULTIHASH && block[start + 3] < 0x80
  ) {
    return start + 4 + block[start + 3] === end ? digestKey(block, start + 4, end) : null;
  }
  const version = readVarint(block, start);
  if (version === null || version.value !== 1) return null;
  const codec = readVarint(block, version.next);
  if (codec === null || codec.value !== RAW_CODEC) return null;
  const hash = readVarint(block, codec.next);
  if (hash === null || hash.value === IDENTITY_MULTIHASH) return null;
  const length = readVarint(block, hash.next);
  if (length === null || length.next + length.value !== end) return null;
  return digestKey(block, length.next, end);
}

/** 48 bits of a digest (zero-padded when shorter) as one safe integer. */
export function digestKey(bytes: Uint8Array, start: number, end: number): number {
  let key = 0;
  for (let i = 0; i < 6; i++) key = key * 256 + (start + i < end ? bytes[start + i] : 0);
  return key;
}
