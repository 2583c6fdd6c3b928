/**
 * A CAR's blocks reach the block index in multihash order, the order its
 * B-tree keeps them in (ipfs/block_list.ts says why: in the order they came,
 * a million random digests touched a page each and each slice's commit
 * rewrote a thousand pages). The sort runs in slices that let the event loop
 * turn, and what the index is given is the same set of blocks, each with its
 * own offset and length.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { turnsDuring } from "../helpers/wait.ts";
import { blockCar } from "../../scripts/bench_attack_surfaces.ts";
import { CarUpload } from "../../src/ipfs/car_upload.ts";
import { BlockList } from "../../src/ipfs/block_list.ts";
import { CID } from "multiformats/cid";
import { create as createDigest } from "multiformats/hashes/digest";

Deno.test("block order: a finished CAR hands its blocks over in multihash order, sorted while the event loop turns", async () => {
  const { car } = blockCar(100_000);
  const upload = new CarUpload({ maxBlocks: 200_000 });
  await (upload.onChunk(car) ?? Promise.resolve());
  const arrived = [...upload.blocks].map((b) => `${b.multihash.toHex()} ${b.offset} ${b.length}`);
  let roots: string[] = [];
  const turns = await turnsDuring(async () => roots = (await upload.finish()).roots);
  assertEquals(roots.length, 1);
  assertOk(turns > 1, `the event loop turned ${turns} times while 100,101 blocks were sorted`);
  const handed = [...upload.blocks].map((b) => `${b.multihash.toHex()} ${b.offset} ${b.length}`);
  assertEquals(handed.length, arrived.length);
  for (let i = 1; i < handed.length; i++) {
    assertOk(handed[i - 1] < handed[i], `block ${i} out of order: ${handed[i - 1]} ≥ ${handed[i]}`);
  }
  assertEquals([...handed].sort(), [...arrived].sort(), "the same blocks, offsets and lengths");
});

Deno.test("block order: multihashes of other codes and lengths sort byte by byte, as the index's keys do", async () => {
  const list = new BlockList();
  const digests = [
    [0x12, [0xff, 0, 0]],
    [0x12, [0x00, 0xff]],
    [0x12, [0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]],
    [0x12, [0x00, 0x00, 0x01, 0x02, 0x03, 0x04]],
    [0x1e, [0x01]], // blake3
    [0xb220, [0x02, 0x03]], // blake2b-256: a two-byte code
    [0x11, [0x7f]], // sha1
  ] as const;
  digests.forEach(([code, bytes], i) => {
    const cid = CID.createV1(0x55, createDigest(code, Uint8Array.from(bytes)));
    list.add(cid.multihash.bytes, i * 100, i);
  });
  await list.sortByMultihash();
  const hexes = [...list].map((b) => b.multihash.toHex());
  assertEquals(hexes, [...hexes].sort());
  assertEquals([...list].map((b) => b.offset).sort((a, b) => a - b), [
    0,
    100,
    200,
    300,
    400,
    500,
    600,
  ]);
});

Deno.test("block list: held in pages, never a doubled copy: 70,000 blocks hold little more than their 51 bytes each", () => {
  const list = new BlockList();
  const multihash = new Uint8Array(34);
  multihash.set([0x12, 0x20]);
  for (let i = 0; i < 70_000; i++) {
    new DataView(multihash.buffer).setUint32(2, i);
    list.add(multihash, i * 50, 8);
  }
  assertEquals(list.size, 70_000);
  const needed = 70_000 * (34 + 17);
  assertOk(list.heldBytes <= needed * 1.1, `${list.heldBytes} bytes held for ${needed}`);
  const offsets = [...list].map((b) => b.offset);
  assertEquals(offsets.length, 70_000);
  assertEquals(offsets[69_999], 69_999 * 50);
});
