/**
 * Storage that is missing, unconfigured, read-only or full. The disk-full and
 * read-only cases use a real tmpfs mount (root only; CI runs as root).
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import { MIB } from "../helpers/bytes.ts";
import { tempFiles } from "../helpers/pieces.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

async function canMount(): Promise<boolean> {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return false;
  const dir = await Deno.makeTempDir();
  try {
    const mounted = await run("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir]);
    if (mounted) await run("umount", [dir]);
    return mounted;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function run(cmd: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
}

const mountable = await canMount();

async function withTmpfs(sizeBytes: number, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "storage-tmpfs-" });
  if (!await run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", dir])) {
    throw new Error("mount failed");
  }
  try {
    await fn(dir);
  } finally {
    await run("umount", [dir]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test("offline: with no data directory configured the server starts and answers 503", async () => {
  await using server = await startTestServer({ args: ["--data-dir", ""] });
  const upload = await server.upload("bafkoffline0001", "x");
  await assertErrorAnswer(upload, 503, "storage_offline");
  const get = await server.get("/p/bafkoffline0001");
  assertEquals(get.status, 503);
  assertEquals(get.headers.get("content-type"), "application/json");
  assertEquals((await errorOf(get)).error, "storage_offline");
  const health = await server.get("/healthz");
  assertEquals(health.status, 503);
  const body = await health.json();
  assertEquals(body.status, "degraded");
  assertEquals(body.storage.ok, false);
  assertMatch(body.storage.detail, /no data directory/);
});

Deno.test("offline: a data directory that cannot be created leaves the server up and 503", async () => {
  const parent = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${parent}/a-file`, "not a directory");
    await using server = await startTestServer({ dataDir: `${parent}/a-file/data` });
    const upload = await server.upload("bafkoffline0002", "x");
    await assertErrorAnswer(upload, 503, "storage_offline");
    const health = await (await server.get("/healthz")).json();
    assertMatch(health.storage.detail, /Cannot use data directory/);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("offline: a data directory removed while running is 503, and recovers when back", async () => {
  await using server = await startTestServer();
  const stored = await server.upload("bafkremoved0001", "kept bytes");
  assertEquals(stored.status, 200);
  await stored.body?.cancel();
  const piecesDir = `${server.dataDir}/pieces`;
  const backup = `${server.dataDir}-moved-away`;
  await Deno.rename(piecesDir, backup);
  try {
    const upload = await server.upload("bafkremoved0002", "new bytes");
    await assertErrorAnswer(upload, 503, "storage_offline");
    const get = await server.get("/p/bafkremoved0001");
    await assertErrorAnswer(get, 503, "storage_offline");
    const head = await server.get("/p/bafkremoved0001", { method: "HEAD" });
    assertEquals(head.status, 503);
    assertEquals((await server.get("/healthz")).status, 503);
    assertEquals(await server.server.services.ledger.reservedTotal(), 0);
  } finally {
    await Deno.rename(backup, piecesDir);
  }
  assertEquals(await (await server.get("/p/bafkremoved0001")).text(), "kept bytes");
  const again = await server.upload("bafkremoved0002", "new bytes");
  assertEquals(again.status, 200);
  await again.body?.cancel();
  assertEquals((await server.get("/healthz")).status, 200);
});

Deno.test({
  name: "faults: a full disk is 507 insufficient_storage with nothing partial kept or charged",
  ignore: !mountable,
  fn: () =>
    withTmpfs(4 * MIB, async (dir) => {
      await using server = await startTestServer({
        dataDir: dir,
        args: ["--sponsored-daily-cap", "6MiB"],
      });
      const response = await server.upload("bafkdiskfull001", patternBytes(5 * MIB));
      await assertErrorAnswer(response, 507, "insufficient_storage");
      assertEquals(await tempFiles(dir), []);
      assertEquals((await server.get("/p/bafkdiskfull001")).status, 404);
      // Nothing was charged: another 5 MiB would still fit the 6 MiB cap if the disk had room,
      // and a small upload succeeds now that the partial file is gone.
      assertEquals(
        (await server.server.services.ledger.status("ip:v4:127.0.0.1", 6 * MIB)).usedBytes,
        0,
      );
      const small = await server.upload("bafkdiskfull002", patternBytes(MIB));
      assertEquals(small.status, 200);
      await small.body?.cancel();
    }),
});

Deno.test({
  name: "faults: a read-only piece store is 503 storage_offline and recovers when writable",
  ignore: !mountable,
  fn: async () => {
    await using server = await startTestServer();
    const first = await server.upload("bafkreadonly001", "before");
    assertEquals(first.status, 200);
    await first.body?.cancel();
    // A read-only bind mount of the store over itself: the kernel refuses every write (EROFS),
    // even for root, while the database beside it stays writable.
    const pieces = `${server.dataDir}/pieces`;
    assertEquals(await run("mount", ["--bind", pieces, pieces]), true);
    try {
      assertEquals(await run("mount", ["-o", "remount,bind,ro", pieces]), true);
      const refused = await server.upload("bafkreadonly002", "during");
      await assertErrorAnswer(refused, 503, "storage_offline");
      assertEquals(await server.server.services.ledger.reservedTotal(), 0);
      // Reading still works from a read-only store.
      assertEquals(await (await server.get("/p/bafkreadonly001")).text(), "before");
      assertEquals((await server.get("/healthz")).status, 503);
    } finally {
      await run("umount", [pieces]);
    }
    const after = await server.upload("bafkreadonly002", "after");
    assertEquals(after.status, 200);
    await after.body?.cancel();
  },
});

Deno.test("faults: a driver that runs out of space mid-upload is 507, nothing kept or charged", async () => {
  // Driver-level fault, for machines where a tmpfs cannot be mounted: the real disk store,
  // whose writes fail with ENOSPC once 1 MiB has gone through.
  const { StoreError } = await import("../../src/driver/driver.ts");
  await using server = await startTestServer({
    args: ["--sponsored-daily-cap", "3MiB"],
    wrapStore: (store) => ({
      ...Object.fromEntries(
        ["check", "stat", "open", "sha256Of", "delete", "list", "cleanup"].map((k) => [
          k,
          (store as unknown as Record<string, (...a: unknown[]) => unknown>)[k].bind(store),
        ]),
      ),
      source: store.source,
      stage: (body, options) => {
        let seen = 0;
        return store.stage(body, {
          ...options,
          onChunk: (chunk) => {
            seen += chunk.byteLength;
            if (seen > MIB) throw new StoreError("full", "No space left on device (injected)");
            return options.onChunk?.(chunk);
          },
        });
      },
    } as typeof store),
  });
  const response = await server.upload("bafkdriverfull1", patternBytes(2 * MIB));
  await assertErrorAnswer(response, 507, "insufficient_storage");
  assertEquals(await tempFiles(server.dataDir), []);
  assertEquals((await server.server.services.ledger.status("ip:v4:127.0.0.1", 1)).usedBytes, 0);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
  const small = await server.upload("bafkdriverfull2", patternBytes(1000));
  assertEquals(small.status, 200);
  await small.body?.cancel();
});
