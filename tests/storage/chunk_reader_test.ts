import { assertEquals } from "../helpers/assert.ts";
import { createChunkReader } from "../../src/kernel/streams/chunk_reader.ts";

function byteStream(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view as Uint8Array;
      const n = Math.min(view.byteLength, total - sent);
      view.fill(7, 0, n);
      sent += n;
      request.respond(n);
      if (sent === total) controller.close();
    },
  });
}

Deno.test("chunk reader: a small body gets a small buffer (regression: 1 MiB per 1 KiB upload)", async () => {
  const reader = createChunkReader(byteStream(1024), { expectedBytes: 1024 });
  const chunk = await reader.next();
  assertEquals(chunk!.buffer.byteLength <= 16 * 1024, true, `${chunk!.buffer.byteLength}`);
  assertEquals(await reader.next(), null);
});

Deno.test("chunk reader: large bodies reuse one buffer of at most 1 MiB", async () => {
  const reader = createChunkReader(byteStream(5 * 1024 * 1024), {
    expectedBytes: 5 * 1024 * 1024,
  });
  let total = 0;
  let largest = 0;
  for (let chunk = await reader.next(); chunk; chunk = await reader.next()) {
    total += chunk.byteLength;
    largest = Math.max(largest, chunk.buffer.byteLength);
  }
  assertEquals(total, 5 * 1024 * 1024);
  assertEquals(largest, 1024 * 1024);
});

Deno.test("chunk reader: streams that are not byte streams are read as they come", async () => {
  const reader = createChunkReader(ReadableStream.from([new Uint8Array(3), new Uint8Array(4)]));
  assertEquals((await reader.next())!.byteLength, 3);
  assertEquals((await reader.next())!.byteLength, 4);
  assertEquals(await reader.next(), null);
});

Deno.test("chunk reader: with two buffers a chunk survives the next read and they alternate", async () => {
  let fill = 0;
  const stream = new ReadableStream({
    type: "bytes",
    pull(controller) {
      const view = controller.byobRequest!.view as Uint8Array;
      view.fill(++fill, 0, 1024);
      controller.byobRequest!.respond(1024);
      if (fill === 4) controller.close();
    },
  });
  const reader = createChunkReader(stream, { expectedBytes: 4096, buffers: 2 });
  const first = await reader.next();
  const second = await reader.next();
  // The first chunk is still intact while the second is in hand: they use different memory.
  assertEquals([first![0], first![1023], second![0]], [1, 1, 2]);
  assertEquals(first!.buffer === second!.buffer, false);
  const third = await reader.next();
  assertEquals(third![0], 3);
  assertEquals(third!.buffer === second!.buffer, false);
  assertEquals((await reader.next())![0], 4);
  assertEquals(await reader.next(), null);
});
