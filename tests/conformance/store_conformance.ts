/**
 * The conformance suite every PieceStore driver must pass (disk today, S3/R2
 * later): call it from a driver's test file with a factory for fresh stores.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { within } from "../helpers/wait.ts";
import { StoreError } from "../../src/driver/driver.ts";
import type { PieceStore } from "../../src/driver/driver.ts";

export interface StoreFixture extends AsyncDisposable {
  store: PieceStore;
}

function streamOf(...chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return ReadableStream.from(
    chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c),
  );
}

function failingStream(first: string): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    pull(controller) {
      if (sent) controller.error(new Error("connection reset"));
      else controller.enqueue(new TextEncoder().encode(first));
      sent = true;
    },
  });
}

/**
 * A byte stream (as request bodies are) that produces bytes only when the
 * driver reads: pull(n, controller) answers the n-th (0-based) read with
 * deliver() or end(), or returns a promise that holds the read until it settles.
 */
function pulledStream(
  pull: (n: number, controller: ReadableByteStreamController) => Promise<void> | void,
  onCancel: (reason: unknown) => void = () => {},
): ReadableStream<Uint8Array> {
  let n = 0;
  return new ReadableStream({
    type: "bytes",
    pull: (controller) => pull(n++, controller),
    cancel: onCancel,
  });
}

/** Delivers bytes into a pending read (BYOB when the driver offers a buffer). */
function deliver(controller: ReadableByteStreamController, bytes: Uint8Array): void {
  const request = controller.byobRequest;
  if (request?.view) {
    const view = new Uint8Array(request.view.buffer, request.view.byteOffset, bytes.length);
    view.set(bytes);
    request.respond(bytes.length);
  } else {
    controller.enqueue(bytes.slice());
  }
}

/** Ends the body, completing a pending BYOB read with no bytes. */
function end(controller: ReadableByteStreamController): void {
  controller.close();
  controller.byobRequest?.respond(0);
}

/** A forever-pending promise: a body that has nothing more to send. */
const silence = () => new Promise<void>(() => {});

/** Lets timers and I/O run before going on: a consumer slower than the body. */
const nextMacrotask = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

async function keys(store: PieceStore): Promise<string[]> {
  const out: string[] = [];
  for await (const key of store.list()) out.push(key);
  return out.sort();
}

async function assertStoreError(fn: () => Promise<unknown>, failure: string) {
  try {
    await fn();
  } catch (error) {
    assertOk(error instanceof StoreError, `expected StoreError, got ${error}`);
    assertEquals(error.failure, failure);
    return;
  }
  throw new Error(`expected StoreError ${failure}, nothing was thrown`);
}

export function runStoreConformance(name: string, create: () => Promise<StoreFixture>): void {
  const test = (title: string, fn: (store: PieceStore) => Promise<void>) =>
    Deno.test(`store conformance (${name}): ${title}`, async () => {
      await using fixture = await create();
      await fn(fixture.store);
    });

  test("a committed piece can be opened, stat'ed and listed", async (store) => {
    const staged = await store.stage(streamOf("hello ", "world"), { expectedBytes: 11 });
    assertEquals(staged.size, 11);
    assertEquals(
      staged.sha256,
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    await staged.commit("bafkpiece0001");
    const opened = await store.open("bafkpiece0001");
    assertOk(opened);
    assertEquals(opened.size, 11);
    assertEquals(await readAll(opened.body), "hello world");
    assertEquals((await store.stat("bafkpiece0001"))?.size, 11);
    assertEquals(await keys(store), ["bafkpiece0001"]);
  });

  test("stat tells when a piece's bytes were written (to the second)", async (store) => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkpiece0010");
    const after = Date.now();
    const stat = await store.stat("bafkpiece0010");
    assertOk(stat !== null);
    assertOk(stat.modifiedAt >= before && stat.modifiedAt <= after, `${stat.modifiedAt}`);
  });

  test("SHA-256 can be left out on the way and computed from the staged bytes", async (store) => {
    const hello = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
    const staged = await store.stage(streamOf("hello ", "world"), {
      expectedBytes: 11,
      computeSha256: false,
    });
    assertEquals(staged.sha256, null);
    assertEquals(await staged.computeSha256(), hello);
    await staged.commit("bafkpiece0008");
    assertEquals(await store.sha256Of("bafkpiece0008"), hello);
    assertEquals(await store.sha256Of("bafkmissing01"), null);
    const hashed = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    assertEquals(
      await hashed.computeSha256(),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
    await hashed.discard();
  });

  test("reading a digest back stops when its signal is aborted", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkpiece0009");
    const controller = new AbortController();
    controller.abort(new Error("stopping"));
    let thrown: unknown = null;
    await store.sha256Of("bafkpiece0009", { signal: controller.signal }).catch((e) => thrown = e);
    assertEquals((thrown as Error | null)?.message, "stopping");
  });

  test("a staged piece is invisible until committed", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    assertEquals(await store.open("bafkpiece0002"), null);
    assertEquals(await store.stat("bafkpiece0002"), null);
    assertEquals(await keys(store), []);
    await staged.commit("bafkpiece0002");
    assertEquals((await store.stat("bafkpiece0002"))?.size, 3);
  });

  test("a discarded piece leaves nothing behind", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.discard();
    await staged.discard();
    assertEquals(await keys(store), []);
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("a body shorter than expected is short_body and leaves nothing", async (store) => {
    await assertStoreError(() => store.stage(streamOf("abc"), { expectedBytes: 10 }), "short_body");
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("a body longer than expected is long_body and leaves nothing", async (store) => {
    await assertStoreError(
      () => store.stage(streamOf("abc", "def"), { expectedBytes: 4 }),
      "long_body",
    );
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("a stream that fails mid-way is short_body and leaves nothing", async (store) => {
    await assertStoreError(
      () => store.stage(failingStream("abc"), { expectedBytes: 10 }),
      "short_body",
    );
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("an aborted stage stops and leaves nothing", async (store) => {
    const controller = new AbortController();
    const body = pulledStream((n, c) => {
      if (n === 0) return deliver(c, new Uint8Array(4));
      // The driver has the first bytes and waits for more: abort it there.
      controller.abort(new Error("shutdown"));
      return silence();
    });
    const staging = store.stage(body, { expectedBytes: 100, signal: controller.signal });
    await assertStoreError(() => within(staging, 5000, "an aborted stage"), "short_body");
    assertEquals(controller.signal.aborted, true);
    assertEquals(await keys(store), []);
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("a body that sends nothing for idleTimeoutMs is stalled and leaves nothing", async (store) => {
    const idleTimeoutMs = 100;
    let cancelled = false;
    let silentSince = 0;
    const body = pulledStream((n, c) => {
      if (n === 0) return deliver(c, new TextEncoder().encode("abc"));
      silentSince = performance.now();
      return silence();
    }, () => cancelled = true);
    const staging = store.stage(body, { expectedBytes: 10, idleTimeoutMs });
    await assertStoreError(() => within(staging, 5000, "a stalled stage"), "stalled");
    const waited = performance.now() - silentSince;
    assertOk(silentSince > 0, "the first bytes were read before the body fell silent");
    assertOk(waited >= idleTimeoutMs * 0.9, `gave up after ${waited} ms of silence, too early`);
    assertOk(cancelled, "the body was cancelled, not left waiting");
    assertEquals(await keys(store), []);
    assertEquals((await store.cleanup()).removedTemporaryFiles, 0);
  });

  test("a commit replaces an orphan left under the key", async (store) => {
    const orphan = await store.stage(streamOf("old"), { expectedBytes: 3 });
    await orphan.commit("bafkpiece0003");
    const fresh = await store.stage(streamOf("new!"), { expectedBytes: 4 });
    await fresh.commit("bafkpiece0003");
    assertEquals(await readAll((await store.open("bafkpiece0003"))!.body), "new!");
  });

  test("committing twice is refused; discarding after commit keeps the piece", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkpiece0004");
    let refused = false;
    await staged.commit("bafkpiece0005").catch(() => refused = true);
    assertOk(refused);
    await staged.discard();
    assertEquals((await store.stat("bafkpiece0004"))?.size, 3);
  });

  test("delete removes a piece and reports whether there was one", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkpiece0006");
    assertEquals(await store.delete("bafkpiece0006"), true);
    assertEquals(await store.delete("bafkpiece0006"), false);
    assertEquals(await store.open("bafkpiece0006"), null);
  });

  test("onChunk sees every byte, in order", async (store) => {
    const seen: number[] = [];
    const staged = await store.stage(streamOf("ab", "cde", "f"), {
      expectedBytes: 6,
      onChunk: (chunk) => {
        seen.push(...chunk);
        return undefined;
      },
    });
    assertEquals(new TextDecoder().decode(new Uint8Array(seen)), "abcdef");
    await staged.commit("bafkpiece0007");
    assertEquals(await readAll((await store.open("bafkpiece0007"))!.body), "abcdef");
  });

  test("a pending onChunk holds reading back: at most 2 chunks beyond what it released", async (store) => {
    // A body that counts the driver's reads against the chunks onChunk has finished with,
    // and a consumer slower than the body: a driver that reads on without waiting for
    // onChunk runs many chunks ahead (the disk driver, so broken, ran 8 to 12 ahead).
    const CHUNKS = 64;
    const CHUNK_BYTES = 1024;
    const MAX_AHEAD = 2;
    let released = 0;
    let maxAhead = 0;
    const body = pulledStream((n, c) => {
      maxAhead = Math.max(maxAhead, n - released);
      if (n === CHUNKS) return end(c);
      deliver(c, new Uint8Array(CHUNK_BYTES).fill(n));
    });
    let calls = 0;
    let bytesSeen = 0;
    const staged = await store.stage(body, {
      expectedBytes: CHUNKS * CHUNK_BYTES,
      onChunk: async (chunk) => {
        calls++;
        bytesSeen += chunk.byteLength;
        await nextMacrotask();
        await nextMacrotask();
        released++;
      },
    });
    assertEquals(bytesSeen, CHUNKS * CHUNK_BYTES);
    assertOk(maxAhead <= MAX_AHEAD, `read ${maxAhead} chunks beyond what onChunk released`);
    assertEquals(released, calls, "every onChunk settled before stage returned");
    assertEquals(staged.size, CHUNKS * CHUNK_BYTES);
    await staged.commit("bafkpiece0010");
    const stored = new Uint8Array(
      await new Response((await store.open("bafkpiece0010"))!.body)
        .arrayBuffer(),
    );
    assertEquals(stored.length, CHUNKS * CHUNK_BYTES);
    assertEquals(stored[CHUNK_BYTES * 5], 5);
    assertEquals(stored.at(-1), CHUNKS - 1);
  });

  test("a range is read from its offset, cut at the piece's end", async (store) => {
    const alphabet = "abcdefghijklmnopqrstuvwxyz";
    const staged = await store.stage(streamOf(alphabet), { expectedBytes: 26 });
    await staged.commit("bafkranges0001");
    const read = async (offset: number, length: number) => {
      const opened = await store.open("bafkranges0001", { offset, length });
      assertOk(opened, `a range at ${offset}`);
      assertEquals(opened.size, 26, "size is the whole piece's");
      return await readAll(opened.body);
    };
    assertEquals(await read(0, 26), alphabet);
    assertEquals(await read(0, 1), "a");
    assertEquals(await read(3, 4), "defg");
    assertEquals(await read(25, 1), "z");
    assertEquals(await read(20, 100), "uvwxyz");
    assertEquals(await store.open("bafkmissing02", { offset: 0, length: 1 }), null);
  });

  test("a range that does not start inside the piece is a RangeError", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkranges0002");
    for (
      const range of [{ offset: 3, length: 1 }, { offset: -1, length: 2 }, { offset: 0, length: 0 }]
    ) {
      let thrown: unknown = null;
      await store.open("bafkranges0002", range).catch((error) => thrown = error);
      assertOk(thrown instanceof RangeError, `${JSON.stringify(range)}: ${thrown}`);
    }
    // Nothing was left open by the refusals: the piece reads whole as before.
    assertEquals(await readAll((await store.open("bafkranges0002"))!.body), "abc");
  });

  test("a range of a large piece reads only its bytes, across chunk boundaries", async (store) => {
    const size = 3 * 1024 * 1024 + 17;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >> 12)) & 0xff;
    const staged = await store.stage(streamOf(bytes), { expectedBytes: size });
    await staged.commit("bafkranges0003");
    const ranges = [
      [65_535, 131_074],
      [1_000_000, 2_000_000],
      [size - 5, 5],
      [1_048_586, 4_000], // starts and ends inside one 1 MiB read (the disk driver's)
      [2 * 1_048_576 - 1, 2], // the last byte of one read and the first of the next
      [0, size],
    ];
    for (const [offset, length] of ranges) {
      const opened = await store.open("bafkranges0003", { offset, length });
      const got = new Uint8Array(await new Response(opened!.body).arrayBuffer());
      assertEquals(got.length, length);
      assertEquals(got, bytes.subarray(offset, offset + length), `range at ${offset}`);
    }
  });

  test("a range opened for an answer starts with exactly the range's bytes", async (store) => {
    // With answerWithLength the body may run on past the range (the HTTP server cuts it at the
    // answer's Content-Length): its first `length` bytes must be the range's, whatever follows.
    const size = 3 * 1024 * 1024 + 17;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 11 + (i >> 9)) & 0xff;
    const staged = await store.stage(streamOf(bytes), { expectedBytes: size });
    await staged.commit("bafkranges0006");
    for (const [offset, length] of [[1_048_586, 4_000], [1000, size - 2000], [size - 3, 3]]) {
      const opened = await store.open("bafkranges0006", { offset, length }, {
        answerWithLength: true,
      });
      assertEquals(opened!.size, size);
      const reader = opened!.body.getReader();
      const got = new Uint8Array(length);
      let filled = 0;
      while (filled < length) {
        const { done, value } = await reader.read();
        assertOk(!done, `range at ${offset}: ended after ${filled} of ${length} bytes`);
        const take = Math.min(value.byteLength, length - filled);
        got.set(value.subarray(0, take), filled);
        filled += take;
      }
      await reader.cancel();
      assertEquals(got, bytes.subarray(offset, offset + length), `range at ${offset}`);
    }
  });

  test("a read abandoned half-way releases the piece, whole or a range", async (store) => {
    const size = 3 * 1024 * 1024;
    const staged = await store.stage(streamOf(new Uint8Array(size)), { expectedBytes: size });
    await staged.commit("bafkranges0004");
    for (const range of [{ offset: 10, length: size - 10 }, undefined]) {
      const opened = await store.open("bafkranges0004", range);
      const reader = opened!.body.getReader();
      assertOk(!(await reader.read()).done);
      await reader.cancel();
    }
    // A file or connection left open by the cancelled read fails this test in Deno's resource
    // sanitizer; the piece itself is still there.
    assertEquals(await store.delete("bafkranges0004"), true);
  });

  test("a piece deleted while it is read gives all its bytes or fails, never fewer", async (store) => {
    // A sweep removing a piece that a GET is sending: the reader gets every byte (a file
    // unlinked while open reads on) or an error, never a stream that ends early as if whole.
    const size = 4 * 1024 * 1024 + 3;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 13 + (i >> 10)) & 0xff;
    const staged = await store.stage(streamOf(bytes), { expectedBytes: size });
    await staged.commit("bafkranges0005");
    for (const range of [undefined, { offset: 5, length: size - 5 }]) {
      if (range) {
        const again = await store.stage(streamOf(bytes), { expectedBytes: size });
        await again.commit("bafkranges0005");
      }
      const opened = await store.open("bafkranges0005", range);
      const reader = opened!.body.getReader();
      const chunks: Uint8Array[] = [];
      const first = await reader.read();
      chunks.push(first.value!);
      assertEquals(await store.delete("bafkranges0005"), true);
      let failed = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(value);
        }
      } catch {
        failed = true;
      }
      if (!failed) {
        const got = new Uint8Array(await new Blob(chunks as BlobPart[]).arrayBuffer());
        assertEquals(got, bytes.subarray(range?.offset ?? 0), "all the bytes, as they were");
      }
      assertEquals(await store.open("bafkranges0005"), null);
    }
  });

  test("a healthy store says so", async (store) => {
    assertEquals((await store.check()).ok, true);
  });
}
