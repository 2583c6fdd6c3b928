/**
 * Every piece gets a PieceCIDv2, whatever cid it was uploaded under: the
 * opaque, sha2-256 and CAR uploads become reachable at /piece/<their
 * PieceCIDv2> (and v1) once the background pass has read them back, byte for
 * byte; a piece whose v2 is not known yet is 404 there; pieces stored before
 * the v2 was recorded get it after a restart; on disk and S3 with SQLite, and
 * on S3 with PostgreSQL. The expected cids come from @web3-storage/data-segment,
 * not from the service's own hasher. Every wait polls the gateway; nothing sleeps.
 */
import * as DataSegment from "@web3-storage/data-segment";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 as sha256Hasher } from "multiformats/hashes/sha2";
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { CAR_TYPE, packFiles } from "../helpers/ipfs.ts";
import { postgresAvailable, postgresForTests } from "../helpers/postgres.ts";
import { s3Available, s3ForTests, s3ServerFlags, s3ServerKeys } from "../helpers/s3.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { storeTests } from "../helpers/stores.ts";
import { eventually } from "../helpers/wait.ts";
import { migrate } from "../../src/db/sqlite/database.ts";
import { MIGRATIONS } from "../../src/db/sqlite/migrations/mod.ts";
import { SqliteCatalogRecords } from "../../src/db/sqlite/catalog_records.ts";

/** The reference's PieceCIDv2 and v1 of a payload. */
function reference(bytes: Uint8Array): { v2: string; v1: string } {
  const piece = DataSegment.Piece.fromPayload(bytes);
  return { v2: piece.link.toString(), v1: DataSegment.Piece.toInfo(piece).link.toString() };
}

async function sha256CidOf(bytes: Uint8Array): Promise<string> {
  return CID.create(1, raw.code, await sha256Hasher.digest(bytes)).toString();
}

async function uploaded(
  server: TestServer,
  cid: string,
  bytes: Uint8Array<ArrayBuffer>,
  contentType = "application/octet-stream",
): Promise<void> {
  const response = await server.upload(cid, bytes, { contentType });
  assertEquals(response.status, 200, await response.text());
}

async function gatewayStatus(server: TestServer, pieceCid: string): Promise<number> {
  const response = await server.get(`/piece/${pieceCid}`);
  await response.body?.cancel();
  return response.status;
}

/** Waits (bounded) until /piece/<v2> answers, then checks both forms serve exactly `bytes`. */
async function servedByPieceCids(server: TestServer, bytes: Uint8Array, what: string) {
  const { v2, v1 } = reference(bytes);
  await eventually(
    async () => await gatewayStatus(server, v2) === 200,
    `${what} at /piece/${v2}`,
    { timeoutMs: 30_000, intervalMs: 20 },
  );
  for (const cid of [v2, v1]) {
    const response = await server.get(`/piece/${cid}`);
    assertEquals(response.status, 200, `${what} by ${cid}`);
    assertEquals(new Uint8Array(await response.arrayBuffer()), bytes, `${what} by ${cid}`);
  }
}

/** An opaque, a sha2-256, a CAR and a tiny (under 127 bytes) upload, each found by its v2. */
async function everyFormGetsItsV2(server: TestServer): Promise<void> {
  const opaque = seededBytes(2 * MIB + 12_345, 31);
  const hashed = seededBytes(300_001, 32);
  const tiny = seededBytes(100, 33);
  const car = await packFiles({ "a.bin": seededBytes(MIB + 77, 34), "b.txt": seededBytes(10, 35) });
  await uploaded(server, "opaquepiece0001", opaque);
  await uploaded(server, await sha256CidOf(hashed), hashed);
  await uploaded(server, "opaquetiny0001", tiny);
  await uploaded(server, car.root, car.car, CAR_TYPE);
  await servedByPieceCids(server, opaque, "opaque upload");
  await servedByPieceCids(server, hashed, "sha2-256 upload");
  await servedByPieceCids(server, tiny, "100-byte upload");
  await servedByPieceCids(server, car.car, "CAR upload");
  const { digests } = server.server.services;
  await digests.whenIdle();
  assertEquals(digests.status(), { backlog: 0, failures: 0 });
}

storeTests(
  "piece cid v2: opaque, sha2-256, CAR and tiny uploads are served by their PieceCIDv2",
  everyFormGetsItsV2,
);

Deno.test({
  name: "piece cid v2: opaque, sha2-256, CAR and tiny uploads, on S3 + PostgreSQL",
  ignore: !s3Available() || !postgresAvailable(),
  async fn() {
    await using database = await postgresForTests();
    const bucket = await s3ForTests();
    try {
      await using server = await startTestServer({
        args: ["--database", database.url, ...s3ServerFlags(bucket)],
        env: s3ServerKeys(bucket),
      });
      await everyFormGetsItsV2(server);
    } finally {
      await bucket.dispose();
    }
  },
});

Deno.test("piece cid v2: unknown until computed (404), and computed after a restart for pieces stored before", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-test-" });
  try {
    const opaque = seededBytes(700_000, 41);
    const underV1 = seededBytes(5000, 42);
    {
      await using server = await startTestServer({ dataDir });
      // Nothing is read back: as if the process stopped right after the answers.
      await server.server.services.digests.stop();
      await uploaded(server, "opaquebefore0001", opaque);
      await uploaded(server, reference(underV1).v1, underV1);
      // As an upgraded database has them: no piece cid recorded for any piece.
      server.server.db.exec("UPDATE pieces SET piece_cid_v2 = NULL, piece_cid_v1 = NULL");
      assertEquals(await gatewayStatus(server, reference(opaque).v2), 404);
      assertEquals(await gatewayStatus(server, reference(opaque).v1), 404);
    }
    await using again = await startTestServer({ dataDir });
    assertEquals(
      again.logs.some((l) => l.msg === "hashing pieces stored before the last stop or upgrade"),
      true,
    );
    await servedByPieceCids(again, opaque, "opaque piece stored before");
    await servedByPieceCids(again, underV1, "piece stored under its v1 before");
    const records = new SqliteCatalogRecords(again.server.db);
    assertEquals(await records.piecesWithoutPieceCidV2(), []);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("piece cid v2: migration 12 keeps an older database's pieces, each waiting for its v2", async () => {
  const db = new DatabaseSync(":memory:");
  try {
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db, MIGRATIONS.filter((m) => m.version <= 11));
    db.exec(`INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at)
             VALUES ('bafkold00001', 3, NULL, 'text/plain', 'a.txt', '2026-01-01T00:00:00Z')`);
    migrate(db, MIGRATIONS);
    const records = new SqliteCatalogRecords(db);
    assertEquals((await records.getPiece("bafkold00001"))?.pieceCidV2, null);
    assertEquals(await records.piecesWithoutPieceCidV2(), ["bafkold00001"]);
  } finally {
    db.close();
  }
});

Deno.test("piece cid v2: a corrupt piece waits for its repair, then gets its PieceCIDv2", async () => {
  await using server = await startTestServer();
  const bytes = seededBytes(300_000, 51);
  await uploaded(server, "opaquerepair0001", bytes);
  await server.server.services.digests.whenIdle();
  const records = new SqliteCatalogRecords(server.server.db);
  server.server.db.exec("UPDATE pieces SET piece_cid_v2 = NULL, piece_cid_v1 = NULL");
  await records.markPieceCorrupt("opaquerepair0001", "2026-11-28T00:00:00Z", "sha256 mismatch");
  // The pass skips it (its bytes are wrong), and counts no failure.
  server.server.services.digests.enqueue("opaquerepair0001");
  await server.server.services.digests.whenIdle();
  assertEquals(await gatewayStatus(server, reference(bytes).v2), 404);
  await uploaded(server, "opaquerepair0001", bytes);
  await servedByPieceCids(server, bytes, "repaired piece");
  assertEquals(server.server.services.digests.status().failures, 0);
});
