/**
 * Which staging leftovers the S3 driver's cleanup() takes, by whose they are
 * (staging_leftovers.ts), on a real radosgw: a dead writer's at once, this
 * store's own once no upload uses them, a live writer's and an unnamed one's
 * not before their 24 h; and an upload in progress is never touched.
 */
import { assertEquals } from "../helpers/assert.ts";
import { MIB } from "../helpers/bytes.ts";
import { patternBytes } from "../helpers/server.ts";
import { abandonedUpload, objectKeys, putObject, s3Test, uploadKeys } from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { S3Store } from "../../src/driver/s3/s3_store.ts";

function storeOf(s3: TestBucket, writer: string): S3Store {
  return new S3Store({ ...s3, writer, partSizeBytes: 5 * MIB });
}

s3Test(
  "s3 leftovers: a dead writer's go at once; a live one's, an unnamed one's stay",
  async (s3) => {
    const store = storeOf(s3, "self");
    const bytes = patternBytes(1024);
    for (const writer of ["live", "dead", "self"]) {
      await putObject(s3, `staging/${writer}/object`, bytes);
      await abandonedUpload(s3, `staging/${writer}/upload`);
    }
    await putObject(s3, "staging/unnamed", bytes);
    const writers = { live: new Set(["self", "live"]), before: Date.now() + 60_000 };
    assertEquals(await store.cleanup({ writers }), { removedTemporaryFiles: 4 });
    assertEquals(await objectKeys(s3, "staging/"), ["staging/live/object", "staging/unnamed"]);
    assertEquals(await uploadKeys(s3, "staging/"), ["staging/live/upload"]);
    // Without the live set (one writer, SQLite), only this store's own would go.
    assertEquals(await store.cleanup(), { removedTemporaryFiles: 0 });
  },
);

s3Test(
  "s3 leftovers: a dead writer's younger than `before` stay (it may have just registered)",
  async (s3) => {
    await putObject(s3, "staging/newcomer/object", patternBytes(10));
    const writers = { live: new Set<string>(), before: Date.now() - 60_000 };
    assertEquals(await storeOf(s3, "self").cleanup({ writers }), { removedTemporaryFiles: 0 });
  },
);

s3Test(
  "s3 leftovers: an upload in progress is left alone by its own store's cleanup",
  async (s3) => {
    const store = storeOf(s3, "self");
    const bytes = patternBytes(12 * MIB, 5);
    let release = () => {};
    const held = new Promise<void>((resolve) => release = resolve);
    // Two parts go, then the body waits: a multipart upload under staging/self/ in use.
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(bytes.subarray(0, 10 * MIB));
        await held;
        controller.enqueue(bytes.subarray(10 * MIB));
        controller.close();
      },
    });
    const staging = store.stage(body, { expectedBytes: bytes.byteLength });
    while ((await uploadKeys(s3, "staging/self/")).length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const writers = { live: new Set<string>(), before: Date.now() + 60_000 };
    assertEquals(await store.cleanup({ writers }), { removedTemporaryFiles: 0 });
    release();
    const staged = await staging;
    await staged.commit("bafkleftoverinuse");
    assertEquals(await objectKeys(s3, "staging/"), [], "the staging object went with the commit");
    const opened = await store.open("bafkleftoverinuse");
    assertEquals(new Uint8Array(await new Response(opened!.body).arrayBuffer()), bytes);
  },
);
