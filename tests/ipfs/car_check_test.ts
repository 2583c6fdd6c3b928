/**
 * The CAR check (ipfs/car_stream.ts) reads the common cids itself and hashes
 * small blocks with small_sha256.ts, so a million tiny blocks make no cid
 * object and no node:crypto hash each (their garbage held the event loop in
 * collections of 30-40 ms). What it reports and refuses is what it did with
 * multiformats: every kind of cid and block below, fed in one piece and a
 * byte at a time, gives the same blocks and the same messages.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { carOf, rawBlock } from "../helpers/ipfs.ts";
import type { Block } from "../helpers/ipfs.ts";
import { CarFormatError, CarStreamVerifier } from "../../src/ipfs/car_stream.ts";
import { sha256Matches } from "../../src/ipfs/small_sha256.ts";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 } from "multiformats/hashes/sha2";
import { identity } from "multiformats/hashes/identity";
import { create as createDigest } from "multiformats/hashes/digest";
import { createHash } from "node:crypto";

/** Checks `car` fed in pieces of `step` bytes: the blocks (multihash hex, offset, length), or the refusal. */
function check(car: Uint8Array, step: number): { blocks: string[]; error: string | null } {
  const blocks: string[] = [];
  const verifier = new CarStreamVerifier({
    onBlock: (b) => blocks.push(`${b.multihash.toHex()} ${b.offset} ${b.length}`),
  });
  try {
    for (let at = 0; at < car.length; at += step) verifier.push(car.subarray(at, at + step));
    verifier.end();
    return { blocks, error: null };
  } catch (error) {
    assertOk(error instanceof CarFormatError, String(error));
    return { blocks, error: `${error.problem}: ${error.message}` };
  }
}

function checkBothWays(car: Uint8Array) {
  const whole = check(car, car.length);
  assertEquals(check(car, 1), whole, "a byte at a time, the same");
  assertEquals(check(car, 7), whole, "seven bytes at a time, the same");
  return whole;
}

const bytes = (n: number, seed = 1) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

Deno.test("CAR check: v0, v1, identity and large blocks are reported with their multihash, offset and length", async () => {
  const small = await rawBlock(bytes(8));
  const edge = await rawBlock(bytes(512, 2)); // the largest hashed here
  const large = await rawBlock(bytes(513, 3)); // the smallest hashed by node:crypto
  const v0bytes = bytes(40, 4);
  const v0: Block = { cid: CID.createV0(await sha256.digest(v0bytes)), bytes: v0bytes };
  const inline = bytes(100, 5);
  const id: Block = { cid: CID.createV1(raw.code, identity.digest(inline)), bytes: inline };
  const blocks = [small, edge, large, v0, id];
  const car = await carOf([small.cid], blocks);
  const { blocks: seen, error } = checkBothWays(car);
  assertEquals(error, null);
  assertEquals(
    seen.map((line) => line.split(" ")[0]),
    blocks.map((b) => b.cid.multihash.bytes.toHex()),
  );
  for (const [i, line] of seen.entries()) {
    const [, offset, length] = line.split(" ").map(Number);
    assertEquals(car.subarray(offset, offset + length), blocks[i].bytes);
  }
});

Deno.test("CAR check: refusals name the block's cid as before", async () => {
  const good = await rawBlock(bytes(8));
  const cases: [Block, RegExp][] = [
    [
      { cid: good.cid, bytes: bytes(8, 9) },
      /^block_mismatch: Block (\S+) at byte \d+ does not hash to its cid$/,
    ],
    [
      { cid: (await rawBlock(bytes(600))).cid, bytes: bytes(600, 9) },
      /^block_mismatch: Block (\S+) at byte \d+ does not hash to its cid$/,
    ],
    [
      { cid: CID.createV1(raw.code, identity.digest(bytes(4))), bytes: bytes(4, 9) },
      /^block_mismatch: Block (\S+) does not match its identity cid$/,
    ],
    [
      { cid: CID.createV1(raw.code, createDigest(0xb220, new Uint8Array(32))), bytes: bytes(8) },
      /^unsupported_hash: Block (\S+) uses the blake2b-256 multihash \(0xb220\); only sha2-256 and identity are accepted$/,
    ],
    [
      { cid: CID.createV1(raw.code, createDigest(0x12, new Uint8Array(20))), bytes: bytes(8) },
      /^malformed: Block (\S+): a sha2-256 digest has 32 bytes$/,
    ],
  ];
  for (const [block, pattern] of cases) {
    const { error } = checkBothWays(await carOf([good.cid], [good, block]));
    const match = pattern.exec(error ?? "");
    assertOk(match, `${block.cid}: ${error}`);
    assertEquals(match[1], block.cid.toString());
  }
});

Deno.test("CAR check: a CAR of 10,000 small blocks makes no cid object per block", async () => {
  const blocks = await Promise.all(Array.from({ length: 10_000 }, (_, i) => rawBlock(bytes(8, i))));
  const car = await carOf([blocks[0].cid], blocks);
  const made = { decodeFirst: 0, decode: 0 };
  const { decodeFirst, decode } = CID;
  // deno-lint-ignore no-explicit-any -- counting calls through the class's own methods
  const counted = CID as any;
  counted.decodeFirst = (...args: Parameters<typeof decodeFirst>) => {
    made.decodeFirst++;
    return decodeFirst.apply(CID, args);
  };
  counted.decode = (...args: Parameters<typeof decode>) => {
    made.decode++;
    return decode.apply(CID, args);
  };
  try {
    assertEquals(check(car, 64 * 1024).blocks.length, 10_000);
  } finally {
    CID.decodeFirst = decodeFirst;
    CID.decode = decode;
  }
  // The header's root is read by @ipld/dag-cbor, through multiformats: that one only.
  assertOk(made.decodeFirst <= 1 && made.decode <= 1, JSON.stringify(made));
});

Deno.test("CAR check: the small-block SHA-256 agrees with node:crypto at every length up to two blocks past the padding", () => {
  const data = bytes(700, 7);
  for (let length = 0; length <= 640; length++) {
    const digest = new Uint8Array(
      createHash("sha256").update(data.subarray(3, 3 + length)).digest(),
    );
    const expected = new Uint8Array(40);
    expected.set(digest, 5);
    assertOk(sha256Matches(data, 3, 3 + length, expected, 5), `length ${length}`);
    expected[5 + (length % 32)] ^= 1;
    assertOk(!sha256Matches(data, 3, 3 + length, expected, 5), `length ${length}, a bit flipped`);
  }
});
