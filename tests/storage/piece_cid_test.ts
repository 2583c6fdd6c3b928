/**
 * Piece CIDs: known answers (FRC-0069's own vectors and the issue's), a
 * cross-check against two independent implementations from npm
 * (@web3-storage/data-segment in JS and the Rust/WASM multihash package), and
 * randomized sizes around every power-of-two and 127-byte boundary.
 */
import * as DataSegment from "@web3-storage/data-segment";
import * as RustHasher from "fr32-sha2-256-trunc254-padded-binary-tree-multihash";
import { assertEquals } from "../helpers/assert.ts";
import { PieceHasher } from "../../src/kernel/piece_cid/hasher.ts";
import { ParallelPieceHasher } from "../../src/kernel/piece_cid/parallel.ts";
import { HashWorkerPool } from "../../src/kernel/piece_cid/pool.ts";
import {
  base32Encode,
  parseCid,
  pieceCidV1,
  pieceCidV2,
  sha256Cid,
} from "../../src/kernel/piece_cid/cid_codec.ts";
import { pieceCidOfStream } from "../../src/kernel/piece_cid/mod.ts";
import { seededRandom } from "../../scripts/lib/random.ts";

function ours(bytes: Uint8Array): { v2: string; v1: string } {
  const hasher = new PieceHasher();
  hasher.update(bytes);
  const d = hasher.digest();
  return { v2: pieceCidV2(d.root, d.height, d.padding), v1: pieceCidV1(d.root) };
}

/** The Rust/WASM reference: its multihash, wrapped as CIDv1 raw. */
function rustReference(bytes: Uint8Array): string {
  const hasher = RustHasher.create();
  hasher.write(bytes);
  const multihash = new Uint8Array(64);
  const length = hasher.digestInto(multihash, 0, true);
  hasher.free?.();
  return "b" + base32Encode(Uint8Array.from([1, 0x55, ...multihash.subarray(0, length)]));
}

function jsReference(bytes: Uint8Array): string {
  return DataSegment.Piece.fromPayload(bytes).link.toString();
}

function quads(count: number, total: number): Uint8Array {
  const out = new Uint8Array(total);
  for (let i = 0; i < count; i++) out.fill(i, 127 * i, 127 * (i + 1));
  return out;
}

const FRC_VECTORS: [string, Uint8Array, string, string?][] = [
  [
    "127*4 bytes of 0,1,2,3",
    quads(4, 508),
    "bafkzcibcaaces3nobte6ezpp4wqan2age2s5yxcatzotcvobhgcmv5wi2xh5mbi",
    "baga6ea4seaqes3nobte6ezpp4wqan2age2s5yxcatzotcvobhgcmv5wi2xh5mbi",
  ],
  [
    "an empty payload",
    new Uint8Array(0),
    "bafkzcibcp4bdomn3tgwgrh3g532zopskstnbrd2n3sxfqbze7rxt7vqn7veigmy",
  ],
  [
    "127 zero bytes",
    new Uint8Array(127),
    "bafkzcibcaabdomn3tgwgrh3g532zopskstnbrd2n3sxfqbze7rxt7vqn7veigmy",
  ],
  [
    "128 zero bytes",
    new Uint8Array(128),
    "bafkzcibcpybwiktap34inmaex4wbs6cghlq5i2j2yd2bb2zndn5ep7ralzphkdy",
  ],
  [
    "127*8 bytes, four quads then zeros",
    quads(4, 127 * 8),
    "bafkzcibcaac542av3szurbbscwuu3zjssvfwbpsvbjf6y3tukvlgl2nf5rha6pa",
    "baga6ea4seaqn42av3szurbbscwuu3zjssvfwbpsvbjf6y3tukvlgl2nf5rha6pa",
  ],
  [
    "512 bytes",
    quads(4, 512),
    "bafkzcibd7abqlxticxolgseegik2stpfgkkuwyf6kufex3doorkvmzpjuxwe4dz4",
    "baga6ea4seaqn42av3szurbbscwuu3zjssvfwbpsvbjf6y3tukvlgl2nf5rha6pa",
  ],
  [
    "513 bytes",
    quads(4, 513),
    "bafkzcibd64bqlxticxolgseegik2stpfgkkuwyf6kufex3doorkvmzpjuxwe4dz4",
    "baga6ea4seaqn42av3szurbbscwuu3zjssvfwbpsvbjf6y3tukvlgl2nf5rha6pa",
  ],
];

for (const [name, bytes, v2, v1] of FRC_VECTORS) {
  Deno.test(`piece cid: FRC-0069 vector, ${name}`, () => {
    const result = ours(bytes);
    assertEquals(result.v2, v2);
    if (v1) assertEquals(result.v1, v1);
  });
}

const ISSUE_VECTORS: [string, () => Uint8Array][] = [
  ["65 zero bytes", () => new Uint8Array(65)],
  ["1000 bytes, byte i = i % 256", () => Uint8Array.from({ length: 1000 }, (_, i) => i % 256)],
  ["10 MiB, byte i = (i*31+7) % 256", () => {
    const out = new Uint8Array(10 * 1024 * 1024);
    for (let i = 0; i < out.length; i++) out[i] = (i * 31 + 7) & 0xff;
    return out;
  }],
];

for (const [name, make] of ISSUE_VECTORS) {
  Deno.test(`piece cid: ${name} agrees with data-segment and the Rust/WASM reference`, () => {
    const bytes = make();
    const result = ours(bytes);
    assertEquals(result.v2, jsReference(bytes));
    assertEquals(result.v2, rustReference(bytes));
    // v1 carries the same root: convert the reference's v2 and compare.
    const parsed = parseCid(result.v2);
    if (parsed.kind !== "piece_v2") throw new Error("not a v2 cid");
    assertEquals(result.v1, pieceCidV1(parsed.root));
    const info = DataSegment.Piece.toInfo(DataSegment.Piece.fromPayload(bytes));
    assertEquals(result.v1, info.link.toString());
  });
}

function boundarySizes(): number[] {
  const sizes = new Set<number>([1, 2, 31, 32, 33, 63, 64, 65, 126, 127, 128]);
  for (let k = 0; k <= 23; k++) {
    for (const base of [2 ** k, 127 * 2 ** k]) {
      if (base > 9 * 1024 * 1024) continue;
      for (const delta of [-2, -1, 0, 1, 2]) if (base + delta > 0) sizes.add(base + delta);
    }
  }
  return [...sizes].sort((a, b) => a - b);
}

Deno.test("piece cid: randomized payloads at every power-of-two and 127-byte boundary", () => {
  const next = seededRandom(0x5eed);
  const sizes = boundarySizes();
  const largest = sizes[sizes.length - 1];
  const pool = new Uint8Array(largest);
  for (let i = 0; i < pool.length; i++) pool[i] = Math.floor(next() * 256);
  for (const size of sizes) {
    const offset = Math.floor(next() * (largest - size + 1));
    const bytes = pool.subarray(offset, offset + size);
    assertEquals(ours(bytes).v2, rustReference(bytes), `size ${size}`);
  }
});

Deno.test("piece cid: chunking never changes the result", () => {
  const next = seededRandom(7);
  const bytes = Uint8Array.from({ length: 300_001 }, () => Math.floor(next() * 256));
  const expected = ours(bytes).v2;
  for (const step of [1, 126, 127, 128, 4096, 65_537]) {
    const hasher = new PieceHasher();
    for (let i = 0; i < bytes.length; i += step) hasher.update(bytes.subarray(i, i + step));
    const d = hasher.digest();
    assertEquals(pieceCidV2(d.root, d.height, d.padding), expected, `step ${step}`);
  }
});

Deno.test("piece cid: the parallel hasher (Workers) equals the single-threaded one", async () => {
  const pool = new HashWorkerPool({ workers: 2 });
  try {
    const segment = 127 * 8192;
    for (const size of [0, 1, segment - 1, segment, segment + 1, 3 * segment + 777]) {
      const bytes = Uint8Array.from({ length: size }, (_, i) => (i * 13 + size) & 0xff);
      for (const usePool of [pool, null]) {
        const hasher = new ParallelPieceHasher({ pool: usePool });
        for (let i = 0; i < size; i += 100_000) await hasher.update(bytes.subarray(i, i + 100_000));
        const d = await hasher.digest();
        assertEquals(pieceCidV2(d.root, d.height, d.padding), ours(bytes).v2, `size ${size}`);
      }
    }
  } finally {
    pool.close();
  }
});

Deno.test("piece cid: pieceCidOfStream reads a ReadableStream", async () => {
  const bytes = Uint8Array.from({ length: 2_000_000 }, (_, i) => i & 0xff);
  const stream = ReadableStream.from([bytes.subarray(0, 777), bytes.subarray(777)]);
  const result = await pieceCidOfStream(stream);
  assertEquals(result.cid, ours(bytes).v2);
  assertEquals(result.cidV1, ours(bytes).v1);
  assertEquals(result.size, 2_000_000);
});

Deno.test("piece cid: parseCid tells the forms apart", () => {
  const v2 = "bafkzcibd64bqlxticxolgseegik2stpfgkkuwyf6kufex3doorkvmzpjuxwe4dz4";
  const parsedV2 = parseCid(v2);
  assertEquals(parsedV2.kind, "piece_v2");
  if (parsedV2.kind === "piece_v2") {
    assertEquals([parsedV2.height, parsedV2.padding, parsedV2.payloadSize], [5, 503, 513]);
    assertEquals(pieceCidV2(parsedV2.root, parsedV2.height, parsedV2.padding), v2);
  }
  assertEquals(
    parseCid("baga6ea4seaqn42av3szurbbscwuu3zjssvfwbpsvbjf6y3tukvlgl2nf5rha6pa").kind,
    "piece_v1",
  );
  const digest = new Uint8Array(32).fill(7);
  assertEquals(parseCid(sha256Cid(digest)).kind, "sha256");
  assertEquals(sha256Cid(digest).slice(0, 7), "bafkrei");
  // dag-pb ("bafybei…") and dag-cbor ("bafyrei…") name an encoded block or a DAG root, not
  // the file's bytes: stored as opaque names, never compared with the bytes.
  assertEquals(sha256Cid(digest, 0x70).slice(0, 7), "bafybei");
  assertEquals(parseCid(sha256Cid(digest, 0x70)).kind, "opaque", "dag-pb");
  assertEquals(parseCid(sha256Cid(digest, 0x71)).kind, "opaque", "dag-cbor");
  for (const opaque of ["myfile2026v1", "bafkreihello0001", "b" + "a".repeat(60), "bafkzcib"]) {
    assertEquals(parseCid(opaque).kind, "opaque", opaque);
  }
  // A v2 whose padding is as large as its tree describes no payload: not a piece cid.
  assertEquals(parseCid(pieceCidV2(new Uint8Array(32), 3, 254)).kind, "opaque");
});
