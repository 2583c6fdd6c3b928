/**
 * The records of resumable uploads, a part of the metadata conformance suite
 * every backend passes (metadata_sqlite_test.ts, metadata_postgres_test.ts
 * call it): an upload's last activity, which any instance writes and never
 * moves back, and the idle sweep's marks: which sponsored uploads are idle,
 * a reservation marked let go only while the upload is still idle and once,
 * the mark read by the next activity and cleared by a new reservation.
 */
import { assertEquals } from "../helpers/assert.ts";
import type { MetadataFixture } from "./metadata_conformance.ts";
import type { ResumableUploadRecord } from "../../src/domain/resumable_upload_records.ts";
import type { Tier } from "../../src/domain/vocabulary.ts";

function upload(
  id: string,
  lastActivityMs: number,
  tier: Tier = "sponsored",
): ResumableUploadRecord {
  return {
    id: id.padEnd(32, "0"),
    cid: "bafkresumable",
    length: 100,
    received: 0,
    contentType: "application/octet-stream",
    filename: null,
    metadata: "",
    tier,
    usageSubject: "ip:127.0.0.1",
    ownerSub: null,
    ownerName: null,
    termDays: 30,
    reservationId: `r-${id}`,
    reservationDay: "2026-11-21",
    staging: "{}",
    createdAt: "2026-11-21T12:00:00Z",
    expiresMs: 90_000_000,
    dealId: null,
    roots: null,
    lastActivityMs,
    reservationReleased: false,
  };
}

export function runResumableConformance(
  test: (title: string, fn: (f: MetadataFixture) => Promise<void>) => void,
): void {
  test("resumable uploads: activity is written forward only, by a touch or with the bytes", async ({ metadata }) => {
    const records = metadata.resumableUploads;
    const a = upload("a", 1000);
    await records.insert(a);
    assertEquals(await records.get(a.id), a);
    assertEquals(await records.touch(a.id, 2000), { reservationReleased: false });
    assertEquals(await records.touch(a.id, 1500), { reservationReleased: false });
    assertEquals((await records.get(a.id))?.lastActivityMs, 2000, "never moved back");
    const update = { fromBytes: 0, received: 10, staging: "{}", expiresMs: a.expiresMs };
    assertEquals(await records.advance(a.id, { ...update, lastActivityMs: 9000 }), true);
    assertEquals((await records.get(a.id))?.lastActivityMs, 9000);
    assertEquals(await records.touch("f".repeat(32), 1), null, "no such upload");
  });

  test("resumable uploads: an idle sponsored upload is marked let go once, not after activity", async ({ metadata }) => {
    const records = metadata.resumableUploads;
    const idle = upload("b", 1000);
    await records.insert(idle);
    await records.insert(upload("c", 5000)); // active since the cut-off
    await records.insert(upload("d", 1000, "token")); // a token's reservation stays
    assertEquals((await records.idleBefore(3000, null, 10)).map((u) => u.id), [idle.id]);
    // Another instance wrote activity after the cut-off it is judged by: not idle.
    assertEquals(await records.markReleasedIfIdle(idle.id, 1000), false);
    assertEquals(await records.markReleasedIfIdle(idle.id, 3000), true);
    assertEquals(await records.markReleasedIfIdle(idle.id, 3000), false, "once");
    assertEquals((await records.get(idle.id))?.reservationReleased, true);
    assertEquals(await records.idleBefore(3000, null, 10), [], "a released one is not idle again");
    // The next request reads the mark as it writes its activity; a new reservation clears it.
    assertEquals(await records.touch(idle.id, 6000), { reservationReleased: true });
    const moved = { reservationId: "r-b2", reservationDay: "2026-11-22" };
    assertEquals(await records.moveReservation(idle.id, moved), true);
    assertEquals(await records.get(idle.id), {
      ...idle,
      ...moved,
      lastActivityMs: 6000,
      reservationReleased: false,
    });
  });

  test("resumable uploads: idle uploads page by (last activity, id)", async ({ metadata }) => {
    const records = metadata.resumableUploads;
    for (const [id, at] of [["e3", 100], ["e1", 100], ["e2", 50], ["e4", 200]] as const) {
      await records.insert(upload(id, at));
    }
    const first = await records.idleBefore(150, null, 2);
    assertEquals(first.map((u) => u.id.slice(0, 2)), ["e2", "e1"]);
    const rest = await records.idleBefore(150, first[1], 2);
    assertEquals(rest.map((u) => u.id.slice(0, 2)), ["e3"]);
  });
}
