/**
 * The Deno-only helpers beside the SDK core: fileSource reads any range of a
 * file on disk (each range on its own handle, so concurrent reads do not mix
 * positions) and uploads through the SDK like any source; a file that shrinks
 * under it is an error, not a short piece. nativeSha256 gives the same
 * digests as the portable SHA-256.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, seededBytes, sha256Hex } from "../helpers/bytes.ts";
import { startTestServer } from "../helpers/server.ts";
import { fileSource } from "../../src/client/sdk/fs.ts";
import { nativeSha256 } from "../../src/client/sdk/native_sha256.ts";
import { createSha256, toHex } from "../../src/client/sdk/sha256.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";

async function tempFile(bytes: Uint8Array): Promise<{ path: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "client-fs-" });
  const path = `${dir}/clip.bin`;
  await Deno.writeFile(path, bytes);
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("fs: fileSource hands out any range, streamed or whole, concurrently", async () => {
  const bytes = seededBytes(3 * MIB + 5, 1);
  await using file = await tempFile(bytes);
  const source = await fileSource(file.path);
  assertEquals([source.size, source.name], [bytes.byteLength, "clip.bin"]);
  const ranges: [number, number][] = [[0, 0], [0, 10], [5, 2 * MIB + 3], [MIB, 3 * MIB + 5]];
  const results = await Promise.all(ranges.map(async ([start, end]) => ({
    streamed: new Uint8Array(await new Response(source.stream(start, end)).arrayBuffer()),
    whole: await source.bytes(start, end),
  })));
  for (const [i, [start, end]] of ranges.entries()) {
    assertEquals(results[i].streamed, bytes.subarray(start, end), `stream [${start}, ${end})`);
    assertEquals(results[i].whole, bytes.subarray(start, end), `bytes [${start}, ${end})`);
  }
  let threw = false;
  try {
    source.stream(0, bytes.byteLength + 1);
  } catch (error) {
    threw = error instanceof RangeError;
  }
  assertOk(threw, "a range past the end is refused");
  // A cancelled stream closes its file: --trace-leaks would report the handle otherwise.
  const reader = source.stream(0, bytes.byteLength).getReader();
  await reader.read();
  await reader.cancel();
});

Deno.test("fs: a file uploaded from disk in pieces downloads identical; a shrunk file fails", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "256KiB"] });
  const bytes = seededBytes(MIB + 100, 2);
  await using file = await tempFile(bytes);
  using client = new StorageClient({ server: server.url, sha256: nativeSha256 });
  const source = await fileSource(file.path);
  const result = await client.upload(source, { contentType: "video/mp4" });
  assertEquals(result.pieces.length, 5);
  assertEquals(result.manifest?.name, "clip.bin", "the file's own name");
  assertEquals(result.manifest?.sha256, await sha256Hex(bytes));
  const back = new Uint8Array(await new Response(await client.download(result.cid)).arrayBuffer());
  assertEquals(back, bytes);

  await Deno.truncate(file.path, 300 * KIB);
  const error = await client.upload(source).then(() => null, (e) => e);
  assertOk(error instanceof Error && /changed|did the file change/.test(error.message), `${error}`);
});

Deno.test("fs: nativeSha256 and the portable SHA-256 agree", () => {
  for (const size of [0, 1, 63, 64, 65, 100_000]) {
    const bytes = seededBytes(size, size);
    const native = nativeSha256();
    const portable = createSha256();
    for (let offset = 0; offset <= size; offset += 999) {
      native.update(bytes.subarray(offset, offset + 999));
      portable.update(bytes.subarray(offset, offset + 999));
    }
    assertEquals(toHex(native.digest()), toHex(portable.digest()), `size ${size}`);
  }
});
