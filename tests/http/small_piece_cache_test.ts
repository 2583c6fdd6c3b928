/** The small-piece cache: its byte bound, second-chance eviction, and reusable answers. */
import { assertEquals } from "../helpers/assert.ts";
import { CachedPiece, SmallPieceCache } from "../../src/http/retrieval/small_piece_cache.ts";

function piece(size: number, fill = 1): CachedPiece {
  return new CachedPiece(new Uint8Array(size).fill(fill), [
    ["content-type", "application/octet-stream"],
    ["etag", '"bafkcached"'],
  ]);
}

Deno.test("small piece cache: never holds more bytes than its bound", () => {
  const cache = new SmallPieceCache({ maxPieceBytes: 100, maxTotalBytes: 250 });
  for (let i = 0; i < 10; i++) cache.set(`piece${i}`, piece(100));
  const kept = Array.from({ length: 10 }, (_, i) => cache.get(`piece${i}`) !== undefined);
  assertEquals(kept, [false, false, false, false, false, false, false, false, true, true]);
  assertEquals(cache.accepts(101), false);
  cache.set("toolarge", piece(101));
  assertEquals(cache.get("toolarge"), undefined);
});

Deno.test("small piece cache: an entry used since it was added survives the next eviction", () => {
  const cache = new SmallPieceCache({ maxPieceBytes: 100, maxTotalBytes: 300 });
  cache.set("a", piece(100));
  cache.set("b", piece(100));
  cache.set("c", piece(100));
  cache.get("a"); // the oldest, but used: b goes instead
  cache.set("d", piece(100));
  assertEquals(["a", "b", "c", "d"].map((k) => cache.get(k) !== undefined), [
    true,
    false,
    true,
    true,
  ]);
});

Deno.test("small piece cache: a disabled cache (0 bytes) keeps nothing", () => {
  const cache = new SmallPieceCache({ maxPieceBytes: 100, maxTotalBytes: 0 });
  cache.set("a", piece(1));
  assertEquals(cache.get("a"), undefined);
});

Deno.test("small piece cache: every answer of an entry is fresh, complete and independent", async () => {
  const entry = piece(1024, 7);
  const first = entry.okResponse();
  const second = entry.okResponse();
  first.headers.set("x-extra", "only on the first");
  assertEquals(new Uint8Array(await first.arrayBuffer()), new Uint8Array(1024).fill(7));
  assertEquals(new Uint8Array(await second.arrayBuffer()), new Uint8Array(1024).fill(7));
  assertEquals(second.headers.get("x-extra"), null);
  assertEquals(entry.okResponse().headers.get("etag"), '"bafkcached"');
  assertEquals(entry.okResponse().status, 200);
});

Deno.test("small piece cache: a deleted entry is gone and gives its bytes back to the bound", () => {
  const cache = new SmallPieceCache({ maxPieceBytes: 100, maxTotalBytes: 200 });
  cache.set("a", piece(100));
  cache.set("b", piece(100));
  cache.delete("a");
  cache.delete("never-cached");
  assertEquals(cache.get("a"), undefined);
  // Room for one more without evicting b: the deleted entry's bytes were given back.
  cache.set("c", piece(100));
  assertEquals(["b", "c"].map((k) => cache.get(k) !== undefined), [true, true]);
});

Deno.test("small piece cache: a full cache holds its bound in memory, each piece once", async () => {
  // In a process of its own, with the collector at hand: fill a 32 MiB cache with 64 KiB
  // pieces, each from an array of its own (as read from the store), and count the
  // ArrayBuffer memory that stays. An entry that kept its array beside its prepared
  // answer (which copies the bytes) held every piece twice.
  const script = `
    import { CachedPiece, SmallPieceCache } from ${
    JSON.stringify(new URL("../../src/http/retrieval/small_piece_cache.ts", import.meta.url).href)
  };
    const cache = new SmallPieceCache({ maxPieceBytes: 65536, maxTotalBytes: 32 * 1048576 });
    globalThis.gc();
    const before = Deno.memoryUsage().external;
    for (let i = 0; i < 1024; i++) {
      cache.set("piece" + i, new CachedPiece(new Uint8Array(65536).fill(i & 255), []));
    }
    // Array buffers are freed after the collection, off the thread: let it settle.
    for (let i = 0; i < 5; i++) {
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const kept = cache.get("piece1023");
    const bytes = await kept.bytes();
    console.log(JSON.stringify({ held: Deno.memoryUsage().external - before, last: bytes[0] }));
  `;
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(run.code, 0, new TextDecoder().decode(run.stderr));
  const { held, last } = JSON.parse(new TextDecoder().decode(run.stdout));
  assertEquals(last, 1023 & 255, "the cached bytes read back");
  const mib = held / 1048576;
  assertEquals(mib < 36, true, `a 32 MiB cache holds ${mib.toFixed(1)} MiB of buffers`);
});
