/**
 * The count's link reader (src/ipfs/link_scan.ts) finds what the decoders
 * find: every CID in a dag-cbor block and every link of a dag-pb block, in
 * order, from blocks the ecosystem's own encoders (@ipld/dag-cbor,
 * @ipld/dag-pb) wrote; raw leaves keyed without an object; and a block it
 * cannot follow is handed back (false / null), never misread. The count
 * itself (dag_walk.ts countDagBlocks) gives the event loop its turns.
 */
import { assertEquals } from "../helpers/assert.ts";
import { CID } from "multiformats/cid";
import { sha256 } from "multiformats/hashes/sha2";
import { identity } from "multiformats/hashes/identity";
import * as raw from "multiformats/codecs/raw";
import * as dagCbor from "@ipld/dag-cbor";
import * as dagPb from "@ipld/dag-pb";
import { digestKey, rawLeafKey, scanCborLinks, scanPbLinks } from "../../src/ipfs/link_scan.ts";
import { countDagBlocks } from "../../src/ipfs/dag_walk.ts";
import { BlockSource } from "../../src/ipfs/blocks.ts";
import type { BlockSourceOptions } from "../../src/ipfs/blocks.ts";
import { turnsDuring } from "../helpers/wait.ts";

async function rawCid(n: number): Promise<CID> {
  return CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode(`leaf ${n}`)));
}

async function cborCid(n: number): Promise<CID> {
  return CID.createV1(dagCbor.code, await sha256.digest(dagCbor.encode({ n })));
}

function scannedCbor(block: Uint8Array): string[] | false {
  const found: string[] = [];
  const ok = scanCborLinks(block, (b, start, end) => {
    found.push(CID.decode(b.subarray(start, end)).toString());
  });
  return ok ? found : false;
}

Deno.test("link scan: dag-cbor links anywhere in a value, among every CBOR kind, are found in order", async () => {
  const [a, b, c, d] = [await rawCid(1), await cborCid(2), await rawCid(3), await rawCid(4)];
  const inline = CID.createV1(raw.code, identity.digest(new Uint8Array([1, 2, 3])));
  const value = {
    a: [a, 1, -1, 2 ** 40, -(2 ** 40), 1.5, "text", new Uint8Array(300), null, true, false],
    b: { nested: { deeper: [b, { c }] } },
    big: 2n ** 60n,
    d,
    empty: [],
    inline,
    long: "x".repeat(70_000),
  };
  const block = dagCbor.encode(value);
  // dag-cbor sorts map keys by length, then bytes: the scan follows the bytes.
  const decoded: string[] = [];
  const visit = (v: unknown): void => {
    const link = CID.asCID(v);
    if (link) return void decoded.push(link.toString());
    if (v instanceof Uint8Array || v === null || typeof v !== "object") return;
    if (Array.isArray(v)) return v.forEach(visit);
    for (const key of Object.keys(v).sort((x, y) => x.length - y.length || (x < y ? -1 : 1))) {
      visit((v as Record<string, unknown>)[key]);
    }
  };
  visit(dagCbor.decode(block));
  assertEquals(scannedCbor(block), decoded);
  assertEquals(decoded.length, 5);
});

Deno.test("link scan: a dag-cbor node of 1,000 links gives each, and raw leaves their digest's key", async () => {
  const leaves = await Promise.all(Array.from({ length: 1000 }, (_, n) => rawCid(n)));
  const block = dagCbor.encode({ leaves });
  const keys: (number | null)[] = [];
  assertEquals(scanCborLinks(block, (b, start, end) => keys.push(rawLeafKey(b, start, end))), true);
  assertEquals(
    keys,
    leaves.map((cid) => digestKey(cid.multihash.digest, 0, cid.multihash.digest.length)),
  );
  // A link that is not a raw leaf has no key: a dag-cbor node, an inline block.
  const node = dagCbor.encode({
    n: await cborCid(1),
    i: CID.createV1(raw.code, identity.digest(new Uint8Array([9]))),
  });
  const others: (number | null)[] = [];
  scanCborLinks(node, (b, start, end) => others.push(rawLeafKey(b, start, end)));
  assertEquals(others, [null, null]);
});

Deno.test("link scan: bytes it cannot follow are handed back, not misread", async () => {
  const block = dagCbor.encode({ leaves: [await rawCid(1), await rawCid(2)] });
  assertEquals(scanCborLinks(block.subarray(0, block.length - 5), () => {}), false, "truncated");
  assertEquals(scanCborLinks(new Uint8Array([...block, 0]), () => {}), false, "trailing bytes");
  // An indefinite-length array (0x9f ... 0xff) is CBOR but not DAG-CBOR.
  assertEquals(scanCborLinks(new Uint8Array([0x9f, 0x01, 0xff]), () => {}), false, "indefinite");
  // Tag 42 on something other than a byte string.
  assertEquals(scanCborLinks(new Uint8Array([0xd8, 42, 0x01]), () => {}), false, "tag on an int");
});

Deno.test("link scan: dag-pb links in order, with names and sizes, and the node's Data", async () => {
  const links = await Promise.all(Array.from({ length: 300 }, async (_, n) => ({
    Hash: n % 3 === 0
      ? CID.createV0(await sha256.digest(new TextEncoder().encode(`v0 ${n}`)))
      : await rawCid(n),
    Name: n % 2 === 0 ? `name-${n}` : undefined,
    Tsize: n % 5 === 0 ? undefined : n * 1000,
  })));
  const data = new Uint8Array([8, 2, 0x18, 0x80, 0x08]);
  const block = dagPb.encode(dagPb.prepare({ Data: data, Links: links }));
  const found: string[] = [];
  const scanned = scanPbLinks(block, (b, start, end) => {
    found.push(CID.decode(b.subarray(start, end)).toString());
  });
  const decoded = dagPb.decode(block);
  assertEquals(found, decoded.Links.map((link) => link.Hash.toString()));
  assertEquals(scanned?.data, decoded.Data);
  assertEquals(scanPbLinks(block.subarray(0, block.length - 3), () => {}), null, "truncated");
  assertEquals(scanPbLinks(new Uint8Array([0x22, 0x00]), () => {}), null, "an unknown field");
});

Deno.test("walk count: a count gives the event loop a turn every 4 nodes it reads, even when every read completes at once", async () => {
  // Nodes inline in their cids (identity): each read resolves at once, as back-to-back
  // disk reads do, and nothing but the count's own turns lets a timer run.
  const leaves = await Promise.all(
    Array.from(
      { length: 50 },
      async (_, i) => CID.createV1(raw.code, await sha256.digest(Uint8Array.of(i))),
    ),
  );
  const nodes = Array.from(
    { length: 64 },
    (_, n) => CID.createV1(dagCbor.code, identity.digest(dagCbor.encode({ n, links: leaves }))),
  );
  const rootBytes = dagCbor.encode({ links: nodes });
  const root = CID.createV1(dagCbor.code, identity.digest(rootBytes));
  const source = new BlockSource({} as BlockSourceOptions); // inline blocks only: nothing stored is asked
  let count = 0;
  const turns = await turnsDuring(async () => {
    count = await countDagBlocks(
      source,
      { cid: root, located: { kind: "inline", length: rootBytes.length, bytes: rootBytes } },
      "all",
      1_000_000,
    );
  });
  assertEquals(count, 50, "the 50 leaves, listed by every node, counted once");
  assertEquals(turns >= 64 / 4, true, `${turns} turns while 65 nodes were read`);
});
