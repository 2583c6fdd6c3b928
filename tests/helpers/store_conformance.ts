/**
 * The conformance suite every PieceStore driver must pass (disk today, S3/R2
 * later): call it from a driver's test file with a factory for fresh stores.
 */
import { assertEquals, assertOk } from "./assert.ts";
import { StoreError } from "../../src/storage/driver/driver.ts";
import type { PieceStore } from "../../src/storage/driver/driver.ts";

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
    assertEquals(await store.stat("bafkpiece0001"), { size: 11 });
    assertEquals(await keys(store), ["bafkpiece0001"]);
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
    assertEquals(await store.stat("bafkpiece0002"), { size: 3 });
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
    const never = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(4));
      },
    });
    const staging = store.stage(never, { expectedBytes: 100, signal: controller.signal });
    setTimeout(() => controller.abort(new Error("shutdown")), 20);
    await assertStoreError(() => staging, "short_body");
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
    assertEquals(await store.stat("bafkpiece0004"), { size: 3 });
  });

  test("delete removes a piece and reports whether there was one", async (store) => {
    const staged = await store.stage(streamOf("abc"), { expectedBytes: 3 });
    await staged.commit("bafkpiece0006");
    assertEquals(await store.delete("bafkpiece0006"), true);
    assertEquals(await store.delete("bafkpiece0006"), false);
    assertEquals(await store.open("bafkpiece0006"), null);
  });

  test("onChunk sees every byte, in order, and can make the reader wait", async (store) => {
    const seen: number[] = [];
    let waits = 0;
    const staged = await store.stage(streamOf("ab", "cde", "f"), {
      expectedBytes: 6,
      onChunk: (chunk) => {
        seen.push(...chunk);
        waits++;
        return new Promise((resolve) => setTimeout(resolve, 1));
      },
    });
    assertEquals(String.fromCharCode(...seen), "abcdef");
    assertOk(waits >= 1);
    await staged.commit("bafkpiece0007");
    assertEquals(await readAll((await store.open("bafkpiece0007"))!.body), "abcdef");
  });

  test("a healthy store says so", async (store) => {
    assertEquals((await store.check()).ok, true);
  });
}
