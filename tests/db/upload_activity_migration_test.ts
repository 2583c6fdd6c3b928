/**
 * SQLite migration 18 on a database with unfinished resumable uploads: each
 * keeps its row, its last activity starts 24 h before its expiry (its
 * creation), and its reservation is held (not let go).
 */
import { assertEquals } from "../helpers/assert.ts";
import { openDatabase } from "../../src/db/sqlite/database.ts";
import { MIGRATIONS } from "../../src/db/sqlite/migrations/mod.ts";
import { SqliteResumableUploadRecords } from "../../src/db/sqlite/resumable_upload_records.ts";

Deno.test("migration 18: an unfinished upload's last activity starts 24 h before its expiry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "migration-18-" });
  const path = `${dir}/storage.db`;
  try {
    const before = openDatabase({ path, migrations: MIGRATIONS.slice(0, 17) });
    before.prepare(
      `INSERT INTO resumable_uploads (id, cid, length, received, content_type, metadata, tier,
         usage_subject, term_days, reservation_id, reservation_day, staging, created_at,
         expires_ms)
       VALUES (?, 'bafkold', 100, 10, 'application/octet-stream', '', 'sponsored',
         'ip:127.0.0.1', 30, 'r1', '2026-11-21', '{}', '2026-11-21T12:00:00Z', ?)`,
    ).run("a".repeat(32), Date.parse("2026-11-22T12:00:00Z"));
    before.close();
    const db = openDatabase({ path });
    try {
      const upload = await new SqliteResumableUploadRecords(db).get("a".repeat(32));
      assertEquals(upload?.received, 10);
      assertEquals(upload?.lastActivityMs, Date.parse("2026-11-21T12:00:00Z"));
      assertEquals(upload?.reservationReleased, false);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
