/**
 * The disk driver's reads (src/driver/disk/file_range.ts) on real files: at
 * most LOOP_STREAMS pieces stream by the read loop at once, and a whole piece
 * asked for beyond that goes out by the runtime's own file stream, so many
 * concurrent downloads stay within the memory they took before; a range
 * always takes the loop. Every way a stream ends (read to the end, cancelled,
 * failed on a file shorter than asked) gives its place back, and every
 * stream, loop or native, is byte-exact.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { FileReads, LOOP_STREAMS, READ_BYTES } from "../../src/driver/disk/file_range.ts";

const SIZE = 2 * READ_BYTES + 333;
const BYTES = seededBytes(SIZE, 31);

async function withFile(fn: (path: string) => Promise<void>): Promise<void> {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeFile(path, BYTES);
    await fn(path);
  } finally {
    await Deno.remove(path);
  }
}

const readAll = async (stream: ReadableStream<Uint8Array>) =>
  new Uint8Array(await new Response(stream).arrayBuffer());

Deno.test("file reads: beyond LOOP_STREAMS loops, whole pieces go out natively", async () => {
  await withFile(async (path) => {
    const reads = new FileReads();
    const open = () => Deno.open(path, { read: true });
    const streams: ReadableStream<Uint8Array>[] = [];
    for (let i = 0; i < LOOP_STREAMS + 3; i++) {
      streams.push(reads.stream(await open(), 0, SIZE, true));
    }
    assertEquals(reads.loops, LOOP_STREAMS, "the loop's places are taken; the rest went natively");
    // A range has no native way out: it takes the loop even now.
    const range = reads.stream(await open(), READ_BYTES - 7, 20, false);
    assertEquals(reads.loops, LOOP_STREAMS + 1);
    assertEquals(await readAll(range), BYTES.subarray(READ_BYTES - 7, READ_BYTES + 13));
    for (const stream of streams) assertEquals(await readAll(stream), BYTES);
    assertEquals(reads.loops, 0, "every stream read to its end gave its place back");
  });
});

Deno.test("file reads: a cancelled or failed stream gives its place back", async () => {
  await withFile(async (path) => {
    const reads = new FileReads();
    const open = () => Deno.open(path, { read: true });
    const cancelled = reads.stream(await open(), 0, SIZE, true).getReader();
    assertOk(!(await cancelled.read()).done);
    await cancelled.cancel();
    // A range past the file's end: the stream fails rather than end short.
    const short = reads.stream(await open(), SIZE - 10, 20, false);
    let failed = false;
    await readAll(short).catch(() => failed = true);
    assertOk(failed, "a file shorter than the range fails the stream");
    const empty = reads.stream(await open(), 0, 0, false);
    assertEquals(await readAll(empty), new Uint8Array(0));
    assertEquals(reads.loops, 0);
    // A BYOB reader's own buffer is read into, and reused read after read.
    const byob = reads.stream(await open(), 0, SIZE, true).getReader({ mode: "byob" });
    let buffer = new ArrayBuffer(READ_BYTES / 2);
    let got = 0;
    for (;;) {
      const { done, value } = await byob.read(new Uint8Array(buffer));
      if (done) break;
      assertEquals(value.byteLength <= READ_BYTES / 2, true);
      assertEquals(value, BYTES.subarray(got, got + value.byteLength));
      got += value.byteLength;
      buffer = value.buffer as ArrayBuffer;
    }
    assertEquals(got, SIZE);
    assertEquals(reads.loops, 0);
  });
});
