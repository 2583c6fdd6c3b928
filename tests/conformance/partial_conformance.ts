/**
 * The part of the driver conformance suite about resumable uploads' bytes
 * (PartialStore): appends of any size build the upload, a cut body keeps what
 * arrived, an append that was never recorded is overwritten by the next one
 * from the recorded state, bytes read back are the bytes appended, and the
 * finished upload commits as a staged piece. Every driver runs it beside
 * store_conformance.ts.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, seededBytes, sha256Hex } from "../helpers/bytes.ts";
import type { PartialState, PieceStore } from "../../src/driver/driver.ts";
import type { StoreFixture } from "./store_conformance.ts";

const ID = "0123456789abcdef0123456789abcdef";

/** A body of `bytes`, in chunks of at most 256 KiB (as a network body arrives). */
function body(bytes: Uint8Array): ReadableStream<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 256 * KIB) chunks.push(bytes.slice(at, at + 256 * KIB));
  return ReadableStream.from(chunks);
}

/** A body that delivers `bytes` and then fails, as a dropped connection. */
function cutBody(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    pull(controller) {
      if (sent) return controller.error(new Error("connection reset"));
      controller.enqueue(bytes.slice());
      sent = true;
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Appends each slice in turn, recording (keeping) each resulting state. */
async function appendAll(store: PieceStore, state: PartialState, slices: Uint8Array[]) {
  for (const slice of slices) {
    const appended = await store.partials.append(state, body(slice), {
      expectedBytes: slice.length,
    });
    assertEquals(appended.cut, null);
    await store.partials.release(state, appended.state);
    state = appended.state;
  }
  return state;
}

async function partialIds(store: PieceStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const partial of store.partials.list()) ids.push(partial.id);
  return ids;
}

export function runPartialConformance(name: string, create: () => Promise<StoreFixture>): void {
  const test = (title: string, fn: (store: PieceStore) => Promise<void>) =>
    Deno.test(`store conformance (${name}): partials: ${title}`, async () => {
      await using fixture = await create();
      await fn(fixture.store);
    });

  test("appends of any size build the upload; reads and the commit give its bytes", async (store) => {
    const file = seededBytes(13 * MIB + 321, 81);
    const cuts = [0, 3 * MIB, 4 * MIB, 11 * MIB + 7, 13 * MIB, file.length];
    let state = await store.partials.create(ID, { length: file.length });
    assertEquals(state.size, 0);
    state = await appendAll(store, state, cuts.slice(1).map((end, i) => file.slice(cuts[i], end)));
    assertEquals(state.size, file.length);
    assertEquals(await partialIds(store), [ID]);
    for (const [from, to] of [[0, file.length], [5, 6], [3 * MIB - 1, 11 * MIB + 9]]) {
      const read = await readAll(store.partials.read(state, { from, to }));
      assertEquals(read, file.slice(from, to), `[${from}, ${to})`);
    }
    const staged = store.partials.staged(JSON.parse(JSON.stringify(state)), { sha256: null });
    assertEquals(await staged.computeSha256(), await sha256Hex(file));
    await staged.commit("bafkpartial0001");
    assertEquals(await readAll((await store.open("bafkpartial0001"))!.body), file);
    await store.partials.remove(ID);
    assertEquals(await partialIds(store), []);
  });

  test("a cut body keeps what arrived, and the next append continues from there", async (store) => {
    const file = seededBytes(7 * MIB, 82);
    const start = await store.partials.create(ID, { length: file.length });
    const seen: number[] = [];
    const cut = await store.partials.append(start, cutBody(file.slice(0, 2 * MIB)), {
      expectedBytes: file.length,
      onChunk: (chunk) => void seen.push(chunk.byteLength),
    });
    assertOk(cut.cut !== null, "the cut is reported");
    assertEquals(cut.state.size, 2 * MIB);
    assertEquals(seen.reduce((a, b) => a + b, 0), 2 * MIB, "onChunk saw what was kept");
    const rest = await appendAll(store, cut.state, [file.slice(2 * MIB)]);
    assertEquals(await readAll(store.partials.read(rest, { from: 0, to: rest.size })), file);
    await store.partials.remove(ID);
  });

  test("an append stopped by its signal (a newer request) keeps and stores what arrived", async (store) => {
    const file = seededBytes(9 * MIB, 86);
    const stop = new AbortController();
    let delivered = 0;
    // A body that has sent 6 MiB and then waits: the signal, not its end, stops the append.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (delivered >= 6 * MIB) {
          stop.abort(new Error("a newer request for this upload arrived"));
          return new Promise(() => {});
        }
        controller.enqueue(file.slice(delivered, delivered += MIB));
      },
    });
    const start = await store.partials.create(ID, { length: file.length });
    const stopped = await store.partials.append(start, body, {
      expectedBytes: file.length,
      signal: stop.signal,
    });
    assertOk(stopped.cut !== null);
    assertEquals(stopped.state.size, 6 * MIB);
    const read = await readAll(store.partials.read(stopped.state, { from: 0, to: 6 * MIB }));
    assertEquals(read, file.slice(0, 6 * MIB));
    await store.partials.remove(ID);
  });

  test("an append that was never recorded is overwritten by the next from the recorded state", async (store) => {
    const first = seededBytes(6 * MIB, 83);
    const lost = seededBytes(3 * MIB, 84);
    const kept = seededBytes(2 * MIB + 5, 85);
    const recorded = await appendAll(store, await store.partials.create(ID, { length: 20 * MIB }), [
      first,
    ]);
    // This append's state is never recorded (a crash, a writer that lost the race)...
    await store.partials.append(recorded, body(lost), { expectedBytes: lost.length });
    // ...so the next one starts from the recorded state again.
    const after = await appendAll(store, recorded, [kept]);
    const expected = new Uint8Array([...first, ...kept]);
    assertEquals(await readAll(store.partials.read(after, { from: 0, to: after.size })), expected);
    const staged = store.partials.staged(after, { sha256: null });
    await staged.commit("bafkpartial0002");
    assertEquals(await readAll((await store.open("bafkpartial0002"))!.body), expected);
    await store.partials.remove(ID);
    assertEquals(await partialIds(store), []);
  });

  test("a discarded upload leaves nothing, and one byte commits", async (store) => {
    const one = await appendAll(store, await store.partials.create(ID, { length: 1 }), [
      new Uint8Array([42]),
    ]);
    const staged = store.partials.staged(one, { sha256: null });
    await staged.discard();
    await store.partials.remove(ID);
    assertEquals(await partialIds(store), []);
    const again = await appendAll(store, await store.partials.create(ID, { length: 1 }), [
      new Uint8Array([7]),
    ]);
    await store.partials.staged(again, { sha256: null }).commit("bafkpartial0003");
    assertEquals(await readAll((await store.open("bafkpartial0003"))!.body), new Uint8Array([7]));
    await store.partials.remove(ID);
  });
}
