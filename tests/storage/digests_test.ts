/**
 * SHA-256 after the fact: a first upload is acknowledged without hashing on
 * the receiving thread, its digest is read back in the background, and every
 * conflict check still compares real digests, whichever side is still unknown.
 */
import { withOverrides } from "../helpers/overrides.ts";
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../helpers/assert.ts";
import { patternBytes, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { migrate, openDatabase } from "../../src/db/sqlite/database.ts";
import { MIGRATIONS } from "../../src/db/sqlite/migrations/mod.ts";
import { sha256Cid } from "../../src/kernel/piece_cid/cid_codec.ts";
import { KIB, MIB, sha256, sha256Hex } from "../helpers/bytes.ts";
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

function recordedSha256(server: TestServer, cid: string): string | null {
  const row = server.server.db.prepare("SELECT sha256 FROM pieces WHERE cid = ?").get(cid) as
    | { sha256: string | null }
    | undefined;
  if (row === undefined) throw new Error(`no piece ${cid}`);
  return row.sha256;
}

async function uploadOk(server: TestServer, cid: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await server.upload(cid, bytes);
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
}

async function healthDigests(server: TestServer) {
  return (await (await server.get("/healthz")).json()).digests;
}

Deno.test("digests: only a large first upload with an unverifiable cid skips hashing on the way", async () => {
  const hashedOnTheWay: Record<string, boolean> = {};
  await using server = await startTestServer({
    wrapStore: (store) =>
      withOverrides(store, {
        stage: (body, options) => {
          hashedOnTheWay[options.expectedBytes] = options.computeSha256 !== false;
          return store.stage(body, options);
        },
      }),
  });
  const large = patternBytes(4 * MIB + 1, 8);
  await uploadOk(server, "bafkdigest0010", large);
  await uploadOk(server, "bafkdigest0011", patternBytes(4 * MIB, 9));
  assertEquals(hashedOnTheWay, { [4 * MIB + 1]: false, [4 * MIB]: true });
  await uploadOk(server, "bafkdigest0010", large); // stored already: compared on the way
  assertEquals(hashedOnTheWay[4 * MIB + 1], true);
  const big = patternBytes(4 * MIB + 2, 10);
  const cid = sha256Cid(await sha256(big));
  await uploadOk(server, cid, big); // its hash is its verification
  assertEquals(hashedOnTheWay[4 * MIB + 2], true);
});

Deno.test("digests: a first upload is hashed in the background and /healthz shows the backlog", async () => {
  await using server = await startTestServer();
  const bytes = patternBytes(5 * MIB, 1);
  await uploadOk(server, "bafkdigest0001", bytes);
  await server.server.services.digests.whenIdle();
  assertEquals(recordedSha256(server, "bafkdigest0001"), await sha256Hex(bytes));
  assertEquals(await healthDigests(server), { backlog: 0, failures: 0 });
});

Deno.test("digests: a sha2-256 cid is hashed on the way, so its digest is known at once", async () => {
  await using server = await startTestServer();
  const bytes = patternBytes(5 * MIB, 2);
  const cid = sha256Cid(await sha256(bytes));
  await server.server.services.digests.stop(); // nothing in the background may fill it in
  await uploadOk(server, cid, bytes);
  assertEquals(recordedSha256(server, cid), await sha256Hex(bytes));
});

Deno.test("digests: with the stored digest still unknown, different bytes are still 409", async () => {
  await using server = await startTestServer();
  const first = patternBytes(5 * MIB, 3);
  await uploadOk(server, "bafkdigest0002", first);
  await server.server.services.digests.whenIdle();
  server.server.db.prepare("UPDATE pieces SET sha256 = NULL WHERE cid = ?").run("bafkdigest0002");

  const other = await server.upload("bafkdigest0002", patternBytes(5 * MIB, 4));
  await assertErrorAnswer(other, 409, "cid_conflict");
  // Deciding computed (and kept) the stored piece's digest.
  assertEquals(recordedSha256(server, "bafkdigest0002"), await sha256Hex(first));
  const served = new Uint8Array(await (await server.get("/p/bafkdigest0002")).arrayBuffer());
  assertEquals(await sha256Hex(served), await sha256Hex(first));
});

Deno.test("digests: identical bytes while the stored digest is unknown make a new deal", async () => {
  await using server = await startTestServer();
  const bytes = patternBytes(64 * KIB, 5);
  await uploadOk(server, "bafkdigest0003", bytes);
  await server.server.services.digests.whenIdle();
  server.server.db.prepare("UPDATE pieces SET sha256 = NULL WHERE cid = ?").run("bafkdigest0003");
  await uploadOk(server, "bafkdigest0003", bytes);
  const deals = server.server.db.prepare("SELECT count(*) AS n FROM deals WHERE cid = ?")
    .get("bafkdigest0003") as { n: number };
  assertEquals(Number(deals.n), 2);
  assertEquals(recordedSha256(server, "bafkdigest0003"), await sha256Hex(bytes));
});

Deno.test("digests: racing uploads of one cid, none hashed on the way, keep exactly one winner", async () => {
  await using server = await startTestServer();
  const bodies = Array.from({ length: 6 }, (_, i) => patternBytes(5 * MIB, 10 + (i % 2)));
  const responses = await Promise.all(bodies.map((b) => server.upload("bafkdigest0004", b)));
  const statuses = await Promise.all(responses.map(async (r) => {
    await r.body?.cancel();
    return r.status;
  }));
  const served = new Uint8Array(await (await server.get("/p/bafkdigest0004")).arrayBuffer());
  const servedSha256 = await sha256Hex(served);
  const bodySha256s = await Promise.all(bodies.map((b) => sha256Hex(b)));
  const winner = bodySha256s.indexOf(servedSha256);
  for (let i = 0; i < bodies.length; i++) {
    assertEquals(statuses[i], i % 2 === winner % 2 ? 200 : 409, `upload ${i}`);
  }
  await server.server.services.digests.whenIdle();
  assertEquals(recordedSha256(server, "bafkdigest0004"), servedSha256);
});

Deno.test("digests: pieces left unhashed by a stop are hashed after the next start", async () => {
  await withTempDir("storage-test-", async (dataDir) => {
    const bytes = patternBytes(200 * KIB, 6);
    {
      await using server = await startTestServer({ dataDir });
      await uploadOk(server, "bafkdigest0005", bytes);
      await server.server.services.digests.whenIdle();
      // As if the process had died between the acknowledgement and the digest.
      server.server.db.prepare("UPDATE pieces SET sha256 = NULL").run();
    }
    await using again = await startTestServer({ dataDir });
    assertEquals(
      again.logs.some((l) => l.msg === "hashing pieces stored before the last stop or upgrade"),
      true,
    );
    await again.server.services.digests.whenIdle();
    assertEquals(recordedSha256(again, "bafkdigest0005"), await sha256Hex(bytes));
  });
});

Deno.test("digests: a shutdown right after a large upload leaves the digest to the next start", async () => {
  await withTempDir("storage-test-", async (dataDir) => {
    const bytes = patternBytes(64 * MIB, 12);
    {
      await using server = await startTestServer({ dataDir });
      await uploadOk(server, "bafkdigest0007", bytes);
      // The background digest is abandoned (or finishes) without a leaked read.
      await server.server.shutdown();
    }
    await using again = await startTestServer({ dataDir });
    await again.server.services.digests.whenIdle();
    assertEquals(recordedSha256(again, "bafkdigest0007"), await sha256Hex(bytes));
    assertEquals(await healthDigests(again), { backlog: 0, failures: 0 });
  });
});

Deno.test("digests: a piece whose bytes vanished is counted as a failure, not retried forever", async () => {
  await using server = await startTestServer();
  await server.server.services.digests.stop();
  await uploadOk(server, "bafkdigest0006", patternBytes(KIB, 7));
  await server.server.store.delete("bafkdigest0006");
  server.server.db.prepare("UPDATE pieces SET sha256 = NULL").run();
  // A fresh digester, as at the next start, finds the piece and cannot read it.
  const { PieceDigests } = await import("../../src/catalog/digests.ts");
  const { SqliteCatalogRecords } = await import("../../src/db/sqlite/catalog_records.ts");
  const digests = new PieceDigests({
    store: server.server.store,
    records: new SqliteCatalogRecords(server.server.db),
    logger: { info() {}, warn() {}, error() {} },
    pool: null,
  });
  assertEquals(await digests.resume(), 1);
  await digests.whenIdle();
  assertEquals(digests.status(), { backlog: 0, failures: 1 });
  assertEquals(recordedSha256(server, "bafkdigest0006"), null);
});

Deno.test("migration 3 keeps every piece and deal of an older database and allows a null digest", () => {
  const db = new DatabaseSync(":memory:");
  try {
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db, MIGRATIONS.filter((m) => m.version <= 2));
    db.exec(`INSERT INTO pieces VALUES ('bafkold00001', 3, '${"a".repeat(64)}', 'text/plain',
             'a.txt', '2026-01-01T00:00:00Z')`);
    db.exec(`INSERT INTO deals VALUES ('stage-1', 'bafkold00001', 'sponsored', NULL, NULL, 3,
             'text/plain', 'a.txt', 30, '2026-01-01T00:00:00Z', '2026-01-31T00:00:00Z')`);
    migrate(db, MIGRATIONS);
    assertEquals(db.prepare("SELECT cid, sha256, filename FROM pieces").all(), [
      { __proto__: null, cid: "bafkold00001", sha256: "a".repeat(64), filename: "a.txt" },
    ]);
    db.exec(`INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at)
             VALUES ('bafknew00001', 1, NULL, 'text/plain', NULL, '2026-01-02T00:00:00Z')`);
    // Foreign keys are on again, and still point at the rebuilt table.
    assertEquals(
      Number((db.prepare("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys),
      1,
    );
    let refused = false;
    try {
      db.exec(`INSERT INTO deals VALUES ('stage-2', 'bafknothere1', 'sponsored', NULL, NULL, 1,
               'text/plain', NULL, 30, '2026-01-01T00:00:00Z', '2026-01-31T00:00:00Z')`);
    } catch {
      refused = true;
    }
    assertEquals(refused, true);
  } finally {
    db.close();
  }
});

Deno.test("migration 3 applies to a database file that openDatabase created at version 2", async () => {
  await withTempDir("storage-test-", (dir) => {
    const old = openDatabase({
      path: `${dir}/s.db`,
      migrations: MIGRATIONS.filter((m) => m.version <= 2),
    });
    old.close();
    const db = openDatabase({ path: `${dir}/s.db` });
    const version = db.prepare("PRAGMA user_version").get() as { user_version: number };
    assertEquals(Number(version.user_version), MIGRATIONS.at(-1)!.version);
    db.close();
  });
});
