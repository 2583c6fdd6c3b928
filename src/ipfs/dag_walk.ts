/**
 * Which blocks a CAR answer of the trustless gateway carries, and in which
 * order: the DAG under a root, depth first, each block once (`order=dfs`,
 * `dups=n`), cut to the asked `dag-scope`:
 *
 *   block   the root block alone
 *   entity  what it takes to read the root as one thing: a UnixFS file's
 *           whole tree, a sharded directory's shards (not its entries), and
 *           for anything else (a plain directory, raw, dag-cbor) the block
 *   all     every block reachable from the root
 *
 * The order is fixed by the blocks themselves (links in the order a block
 * lists them), so the same DAG always gives the same bytes: the answer can
 * carry a strong ETag. Links are read from dag-pb, dag-cbor and dag-json
 * blocks; raw blocks have none, and a block of another codec is sent but not
 * looked into. Identity blocks are looked into but never sent (their data is
 * in the cid that links them).
 */
import { CID } from "multiformats/cid";
import * as dagPb from "@ipld/dag-pb";
import * as dagCbor from "@ipld/dag-cbor";
import * as dagJson from "@ipld/dag-json";
import { UnixFS } from "ipfs-unixfs";
import { DEFAULT_MAX_BLOCK_BYTES } from "./car_stream.ts";
import type { BlockSource, LocatedBlock } from "./blocks.ts";
import { IDENTITY_MULTIHASH } from "./multihash.ts";
import { RAW_CODEC } from "../kernel/piece_cid/cid_codec.ts";
import { digestKey, rawLeafKey, scanCborLinks, scanPbLinks } from "./link_scan.ts";
import { yieldToEventLoop } from "../kernel/turns.ts";

/**
 * Nodes a count reads between two turns of the event loop (4 nodes of 1,000
 * links: about a millisecond). Its reads complete back to back, and
 * completions run one after the other without the loop reaching its timers:
 * four counts at once held the service's 10 ms tick 30-50 ms with no step of
 * them longer than a millisecond, and at 16 nodes a turn still 10-25 ms.
 */
const NODES_PER_TURN = 4;

export type DagScope = "block" | "entity" | "all";

/** A block of the walk: to be sent (unless inline), with its bytes when they were read. */
export interface WalkedBlock {
  cid: CID;
  located: LocatedBlock;
  /** Read to find links; null for raw blocks, which are streamed from the store instead. */
  bytes: Uint8Array | null;
}

/** A block the walk needs is not held (or its bytes cannot be decoded). */
export class MissingBlockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MissingBlockError";
  }
}

/** How far below a block the walk goes. */
type Depth = "none" | "entity" | "shards" | "all";

/**
 * The blocks under `root` for `scope`, in order; `root` must be located
 * already (the caller answered 404 otherwise). Throws MissingBlockError when
 * a block below it is not held: the answer is then cut short.
 */
export async function* walkDag(
  source: BlockSource,
  root: { cid: CID; located: LocatedBlock },
  scope: DagScope,
): AsyncGenerator<WalkedBlock> {
  const seen = new Set<string>();
  const stack: { cid: CID; located: LocatedBlock | null; depth: Depth }[] = [
    { ...root, depth: depthOf(scope) },
  ];
  while (stack.length > 0) {
    const { cid, located: known, depth } = stack.pop()!;
    const key = cid.multihash.bytes.toHex();
    if (seen.has(key)) continue;
    seen.add(key);
    const located = known ?? await source.locate(cid);
    if (located === null) throw new MissingBlockError(`Block ${cid} is not held`);
    if (isCountedLeaf(cid)) {
      yield { cid, located, bytes: null };
      continue;
    }
    if (located.length > DEFAULT_MAX_BLOCK_BYTES) {
      throw new MissingBlockError(`Block ${cid} is too large to read its links`);
    }
    const bytes = await source.read(located);
    if (bytes === null) throw new MissingBlockError(`Block ${cid} is not held`);
    yield { cid, located, bytes };
    const children = depth === "none" ? [] : childrenOf(cid, bytes, depth);
    // Pushed last first, so the first link is walked first.
    for (let i = children.length - 1; i >= 0; i--) stack.push({ ...children[i], located: null });
  }
}

/**
 * How many blocks walkDag would send, counted up to `limit + 1` at most: the
 * blocks that have links are read, raw leaves only counted (not looked up),
 * so a file of many leaves costs a read per node, not per leaf. A block found
 * missing ends the count where it stands (the walk itself answers for it).
 *
 * Why not walkDag's own loop: a count runs before every CAR answer, and an
 * anonymous client can ask for four at once of a DAG of a million leaves.
 * Through the walk's async generator each leaf cost a promise, a stack entry
 * and a kept hex key (about a kilobyte of garbage a leaf, 100 MB a count of
 * 100,001): the collector's pauses held the one serving thread. Here a leaf
 * is counted where its parent lists it, and remembered as a number (48 bits
 * of its digest: two leaves that share them are counted once, so a count
 * may fall short by one in millions, which a bound on work can afford).
 * Nodes still go depth first with exact keys, so the scope's cut is walkDag's.
 */
export async function countDagBlocks(
  source: BlockSource,
  root: { cid: CID; located: LocatedBlock },
  scope: DagScope,
  limit: number,
): Promise<number> {
  const seenNodes = new Set<string>();
  const seenLeaves = new Set<number>();
  let count = 0;
  let nodesThisTurn = 0;
  const countLeafKey = (key: number): void => {
    if (seenLeaves.has(key)) return;
    seenLeaves.add(key);
    count++;
  };
  const stack: { cid: CID; located: LocatedBlock | null; depth: Depth }[] = [
    { cid: root.cid, located: root.located, depth: depthOf(scope) },
  ];
  try {
    while (stack.length > 0 && count <= limit) {
      const { cid, located: known, depth } = stack.pop()!;
      if (isCountedLeaf(cid)) {
        countLeafKey(leafKey(cid));
        continue;
      }
      const key = cid.multihash.bytes.toHex();
      if (seenNodes.has(key)) continue;
      seenNodes.add(key);
      const located = known ?? await source.locate(cid);
      if (located === null || located.length > DEFAULT_MAX_BLOCK_BYTES) break;
      const bytes = await source.read(located);
      if (bytes === null) break;
      if (++nodesThisTurn === NODES_PER_TURN) {
        nodesThisTurn = 0;
        await yieldToEventLoop();
      }
      if (cid.multihash.code !== IDENTITY_MULTIHASH) count++;
      if (depth === "none") continue;
      const scanned = scannedChildren(cid, bytes, depth, countLeafKey);
      const children = scanned ?? childrenOf(cid, bytes, depth);
      for (let i = children.length - 1; i >= 0; i--) {
        const child = children[i];
        if (scanned === null && isCountedLeaf(child.cid)) countLeafKey(leafKey(child.cid));
        else stack.push({ cid: child.cid, located: null, depth: child.depth });
      }
    }
  } catch (error) {
    if (!(error instanceof MissingBlockError)) throw error;
  }
  return Math.min(count, limit + 1);
}

/**
 * A node's links read from its bytes (link_scan.ts): raw leaves go to
 * `onLeaf` as they come, the links to follow are returned in order; null when
 * the bytes cannot be read that way, or the node needs its decoder (a sharded
 * directory's names), and childrenOf decodes it instead.
 */
function scannedChildren(
  cid: CID,
  bytes: Uint8Array,
  depth: Depth,
  onLeaf: (key: number) => void,
): { cid: CID; depth: Depth }[] | null {
  const follow: { cid: CID; depth: Depth }[] = [];
  const onLink = (block: Uint8Array, start: number, end: number) => {
    const key = rawLeafKey(block, start, end);
    if (key !== null) return onLeaf(key);
    try {
      follow.push({ cid: CID.decode(block.subarray(start, end)), depth: "all" });
    } catch (error) {
      throw new MissingBlockError(
        `Block ${cid} links to no valid cid: ${(error as Error).message}`,
      );
    }
  };
  if (cid.code === dagCbor.code) {
    if (depth !== "all") return [];
    return scanCborLinks(bytes, onLink) ? follow : null;
  }
  if (cid.code !== dagPb.code) return null;
  if (depth !== "all") {
    // Which links an entity follows depends on the UnixFS type in Data: read that first.
    const head = scanPbLinks(bytes, () => {});
    if (head === null) return null;
    const unixfs = head.data ? tryUnixFs(head.data) : null;
    const whole = depth === "entity" && (unixfs?.type === "file" || unixfs?.type === "raw");
    if (!whole) return unixfs?.type === "hamt-sharded-directory" ? null : [];
  }
  return scanPbLinks(bytes, onLink) === null ? null : follow;
}

/** A raw block that is not inline: counted, never read. */
function isCountedLeaf(cid: CID): boolean {
  return cid.code === RAW_CODEC && cid.multihash.code !== IDENTITY_MULTIHASH;
}

/** A leaf's key in the count: 48 bits of its digest (link_scan.ts digestKey). */
function leafKey(cid: CID): number {
  const digest = cid.multihash.digest;
  return digestKey(digest, 0, digest.length);
}

function depthOf(scope: DagScope): Depth {
  return scope === "block" ? "none" : scope === "all" ? "all" : "entity";
}

/** The links of a block to follow at this depth, each with the depth below it. */
function childrenOf(cid: CID, bytes: Uint8Array, depth: Depth): { cid: CID; depth: Depth }[] {
  try {
    switch (cid.code) {
      case dagPb.code:
        return dagPbChildren(dagPb.decode(bytes), depth);
      case dagCbor.code:
        return depth === "all" ? linksIn(dagCbor.decode(bytes)).map(all) : [];
      case dagJson.code:
        return depth === "all" ? linksIn(dagJson.decode(bytes)).map(all) : [];
      default:
        return [];
    }
  } catch (error) {
    throw new MissingBlockError(`Block ${cid} cannot be decoded: ${(error as Error).message}`);
  }
}

function all(cid: CID): { cid: CID; depth: Depth } {
  return { cid, depth: "all" };
}

function dagPbChildren(node: dagPb.PBNode, depth: Depth): { cid: CID; depth: Depth }[] {
  const links = node.Links;
  if (depth === "all") return links.map((link) => all(link.Hash));
  const unixfs = node.Data ? tryUnixFs(node.Data) : null;
  if (unixfs === null) return [];
  if (depth === "entity" && (unixfs.type === "file" || unixfs.type === "raw")) {
    return links.map((link) => all(link.Hash));
  }
  if (unixfs.type === "hamt-sharded-directory") {
    // A shard's links to its sub-shards are named by the bucket alone; entries add their name.
    const bucketNameLength = (Number(unixfs.fanout ?? 256n) - 1).toString(16).length;
    return links
      .filter((link) => (link.Name ?? "").length === bucketNameLength)
      .map((link) => ({ cid: link.Hash, depth: "shards" as Depth }));
  }
  return [];
}

function tryUnixFs(data: Uint8Array): UnixFS | null {
  try {
    return UnixFS.unmarshal(data);
  } catch {
    return null; // dag-pb that is not UnixFS: a block, nothing more to read in it
  }
}

/** Every cid in a decoded dag-cbor or dag-json value, in the order it lists them. */
function linksIn(value: unknown, found: CID[] = []): CID[] {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return found;
  const link = CID.asCID(value);
  if (link) {
    found.push(link);
  } else if (Array.isArray(value)) {
    for (const item of value) linksIn(item, found);
  } else {
    for (const item of Object.values(value)) linksIn(item, found);
  }
  return found;
}
