import { assertEquals, assertRejects } from "../helpers/assert.ts";
import { runStoreConformance } from "./store_conformance.ts";
import { runPartialConformance } from "./partial_conformance.ts";
import { DiskStore } from "../../src/driver/disk/disk_store.ts";
import { shardOf, TEMP_DIR } from "../../src/driver/disk/layout.ts";
import { listFiles } from "../helpers/files.ts";

async function diskFixture() {
  const dir = await Deno.makeTempDir({ prefix: "disk-store-" });
  return {
    dir,
    store: await DiskStore.create({ root: `${dir}/pieces` }),
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

runStoreConformance("disk", diskFixture);
runPartialConformance("disk", diskFixture);

Deno.test("disk store: pieces land in sharded paths and temp files only in tmp/", async () => {
  await using fixture = await diskFixture();
  const staged = await fixture.store.stage(ReadableStream.from([new Uint8Array([1, 2, 3])]), {
    expectedBytes: 3,
  });
  assertEquals((await listFiles(`${fixture.dir}/pieces`)).length, 1);
  assertEquals((await listFiles(`${fixture.dir}/pieces`))[0].startsWith(`${TEMP_DIR}/`), true);
  await staged.commit("bafkshard00001");
  const files = await listFiles(`${fixture.dir}/pieces`);
  assertEquals(files.length, 1);
  assertEquals(/^[0-9a-f]{2}\/[0-9a-f]{2}\/bafkshard00001$/.test(files[0]), true, files[0]);
});

Deno.test("disk store: cleanup removes leftover temp files", async () => {
  await using fixture = await diskFixture();
  await Deno.mkdir(`${fixture.dir}/pieces/tmp`, { recursive: true });
  await Deno.writeTextFile(`${fixture.dir}/pieces/tmp/abc.part`, "partial");
  assertEquals(await fixture.store.cleanup(), { removedTemporaryFiles: 1 });
  assertEquals(await listFiles(`${fixture.dir}/pieces`), []);
});

Deno.test("disk store: cleanup while serving spares the uploads in progress and staged", async () => {
  await using fixture = await diskFixture();
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new Uint8Array([1, 2]));
      await held;
      controller.enqueue(new Uint8Array([3]));
      controller.close();
    },
  });
  const staging = fixture.store.stage(body, { expectedBytes: 3 });
  const staged = await fixture.store.stage(ReadableStream.from([new Uint8Array([4])]), {
    expectedBytes: 1,
  });
  while ((await listFiles(`${fixture.dir}/pieces`)).length < 2) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Deno.writeTextFile(`${fixture.dir}/pieces/tmp/dead.part`, "a crashed upload's");
  assertEquals(await fixture.store.cleanup(), { removedTemporaryFiles: 1 });
  release();
  await (await staging).commit("bafkinprogress01");
  await staged.commit("bafkstagedwaits1");
  assertEquals((await fixture.store.stat("bafkinprogress01"))?.size, 3);
  assertEquals((await fixture.store.stat("bafkstagedwaits1"))?.size, 1);
  assertEquals(await fixture.store.cleanup(), { removedTemporaryFiles: 0 });
});

Deno.test("disk store: keys that are not canonical cids never reach the file system", async () => {
  await using fixture = await diskFixture();
  await assertRejects(() => fixture.store.open("../../etc/passwd"), /Cannot use piece key/);
});

Deno.test("disk store: shared with the group, pieces (old and new) are 0640 under 0710, tmp/ 0700", async () => {
  await using fixture = await diskFixture();
  const root = `${fixture.dir}/pieces`;
  const stage = async (store: DiskStore, key: string) => {
    const staged = await store.stage(ReadableStream.from([new Uint8Array([1, 2, 3])]), {
      expectedBytes: 3,
    });
    await staged.commit(key);
  };
  // Stored before the sharing began (as umask 077 leaves them under systemd), then shared.
  const old = Deno.umask(0o077);
  try {
    await stage(await DiskStore.create({ root }), "bafkbeforeshare1");
  } finally {
    Deno.umask(old);
  }
  const shared = await DiskStore.create({ root, shareWithGroup: true });
  await stage(shared, "bafkaftershare01");
  const mode = (path: string) => ((Deno.statSync(path).mode ?? 0) & 0o777).toString(8);
  assertEquals(mode(root), "710");
  assertEquals(mode(`${root}/tmp`), "700");
  for (const key of ["bafkbeforeshare1", "bafkaftershare01"]) {
    const file = shared.localFileOf(key);
    assertEquals(file, `${root}/${shardOf(key)}/${key}`);
    assertEquals(mode(file), "640", key);
    assertEquals(mode(`${root}/${shardOf(key)}`), "710", key);
    assertEquals(mode(`${root}/${shardOf(key).split("/")[0]}`), "710", key);
  }
});
