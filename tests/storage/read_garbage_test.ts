/**
 * The read loop asks V8 for a young-generation collection every COLLECT_EVERY
 * bytes it reads (src/driver/disk/read_garbage.ts), so its spent 1 MiB buffers
 * do not pile up to ~64 MiB per download before V8 frees them. V8's gc is
 * stood in for by a counter: this process runs without --expose-gc.
 */
import { assertEquals } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { withTempDir } from "../helpers/files.ts";
import { fileRangeStream, READ_BYTES } from "../../src/driver/disk/file_range.ts";
import { COLLECT_EVERY, ReadGarbage } from "../../src/driver/disk/read_garbage.ts";

Deno.test("read loop: a collection asked for every COLLECT_EVERY bytes read, the bytes exact", async () => {
  await withTempDir("read-garbage-", async (dir) => {
    const bytes = seededBytes(2 * COLLECT_EVERY + 3 * READ_BYTES + 17, 7);
    await Deno.writeFile(`${dir}/piece`, bytes);
    const asked: unknown[] = [];
    const garbage = new ReadGarbage((options) => asked.push(options));
    for (let pass = 1; pass <= 2; pass++) {
      const file = await Deno.open(`${dir}/piece`);
      const read = await new Response(fileRangeStream(file, bytes.length, { garbage })).bytes();
      assertEquals(read, bytes, "exactly the bytes");
      // The count runs on across reads: a store's downloads together, not each alone.
      assertEquals(asked.length, Math.floor((pass * bytes.length) / COLLECT_EVERY), `pass ${pass}`);
    }
    assertEquals(asked[0], { type: "minor", execution: "async" });
  });
});

Deno.test("read loop: without V8's gc exposed, nothing is asked and nothing fails", () => {
  const garbage = new ReadGarbage();
  for (let i = 0; i < 40; i++) garbage.read(READ_BYTES);
  assertEquals(typeof (globalThis as { gc?: unknown }).gc, "undefined");
});
