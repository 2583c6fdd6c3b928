/**
 * Resumable uploads on PostgreSQL and an S3 bucket (Ceph radosgw): any
 * instance continues an upload another started (the record in the shared
 * database, the bytes as objects in the bucket, the hash rebuilt from them),
 * the reservation outlives the instance that made it, a wrong cid leaves no
 * object behind, expiry releases the reservation's row, and tus-js-client
 * aborts, resumes and finishes against it.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { FakeClock } from "../helpers/clock.ts";
import { postgresClient } from "../helpers/postgres.ts";
import { objectKeys, uploadKeys } from "../helpers/s3.ts";
import { scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";
import type { ScaleOut } from "../helpers/scale_out.ts";
import { bearer, errorOf, signup } from "../helpers/server.ts";
import { MemoryUrlStorage, tusMetadata, tusUpload } from "../helpers/tus_client.ts";
import { pieceCidOf, tusCreated, tusHead, tusPatch } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";

const FILE = seededBytes(19 * MIB + 99, 91);
const CID = pieceCidOf(FILE);

/** A test on a deployment of its own: one database and one bucket, for the instances it starts. */
function scaleOutTest(name: string, fn: (deployment: ScaleOut) => Promise<void>): void {
  Deno.test({
    name: `tus scale-out: ${name}`,
    ignore: !scaleOutAvailable(),
    async fn() {
      await using deployment = await scaleOutForTests();
      await fn(deployment);
    },
  });
}

/** What PostgreSQL holds in reservations: rows and the counters' reserved bytes. */
async function reservedInDatabase(
  deployment: { databaseUrl: string },
): Promise<{ rows: number; bytes: number }> {
  await using sql = postgresClient(deployment.databaseUrl);
  const [rows] = await sql`SELECT COUNT(*)::int AS n FROM cap_reservations`;
  const [bytes] = await sql`SELECT COALESCE(SUM(reserved_bytes), 0)::int8 AS b FROM usage_daily`;
  return { rows: Number(rows.n), bytes: Number(bytes.b) };
}

scaleOutTest(
  "instances take turns on one upload; the hash is rebuilt from the bucket",
  async (deployment) => {
    await using a = await deployment.startInstance();
    await using b = await deployment.startInstance();
    const { token } = await signup(a);
    const auth = bearer(token);
    const url = await tusCreated(a.url, { cid: CID, length: FILE.length, headers: auth });
    const on = (server: { url: string }) => url.replace(new URL(url).origin, server.url);
    // Odd sizes: tails of fewer than 5 MiB are carried from one instance's append to the other's.
    const cuts = [0, 7 * MIB + 1, 9 * MIB, 16 * MIB + 3, FILE.length];
    const turns = [a, b, a, b];
    for (let i = 0; i < turns.length; i++) {
      const answer = await tusPatch(on(turns[i]), cuts[i], FILE.slice(cuts[i], cuts[i + 1]), auth);
      assertEquals(answer.status, 204, await answer.text());
      assertEquals(answer.headers.get("upload-offset"), String(cuts[i + 1]));
      if (i + 1 < turns.length) {
        assertEquals(
          (await tusHead(on(turns[(i + 1) % 2 === 0 ? 0 : 1]), auth)).offset,
          cuts[i + 1],
        );
      } else {
        assertEquals(answer.headers.get("x-storage-cid"), CID);
      }
    }
    const stored = new Uint8Array(await (await a.get(`/p/${CID}`)).arrayBuffer());
    assertEquals(stored, FILE);
    assertEquals((await (await fetch(on(a), { headers: auth })).json()).cid, CID);
    assertEquals(await reservedInDatabase(deployment), { rows: 0, bytes: 0 });
    assertEquals(await objectKeys(deployment.s3, "partial/"), [], "the parts went with the commit");
    assertEquals(await uploadKeys(deployment.s3), []);
  },
);

scaleOutTest(
  "the reservation outlives the instance that made it; another one finishes",
  async (deployment) => {
    await using b = await deployment.startInstance({ args: ["--sponsored-daily-cap", "30MiB"] });
    let url: string;
    {
      await using a = await deployment.startInstance({ args: ["--sponsored-daily-cap", "30MiB"] });
      url = await tusCreated(a.url, { cid: CID, length: FILE.length });
      assertEquals((await tusPatch(url, 0, FILE.slice(0, 8 * MIB))).status, 204);
    }
    // a is gone (its own reservations went with it); the upload's is no instance's.
    assertEquals(await reservedInDatabase(deployment), { rows: 1, bytes: FILE.length });
    const refused = await b.upload("bafkplainupload1", new Uint8Array(12 * MIB));
    assertEquals([refused.status, (await errorOf(refused)).error], [429, "rate_limited"]);
    const moved = url.replace(new URL(url).origin, b.url);
    const last = await tusPatch(moved, 8 * MIB, FILE.slice(8 * MIB));
    assertEquals(last.status, 204, await last.text());
    assertEquals(last.headers.get("x-storage-cid"), CID);
    assertEquals(await reservedInDatabase(deployment), { rows: 0, bytes: 0 });
  },
);

scaleOutTest(
  "a wrong cid keeps no object; expiry releases the reservation row",
  async (deployment) => {
    const clock = new FakeClock(Date.now());
    await using server = await deployment.startInstance({
      clock,
      jobIntervals: { "resumable-expiry": 20 },
    });
    const wrong = seededBytes(FILE.length, 92);
    const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
    assertEquals((await tusPatch(url, 0, wrong.slice(0, 11 * MIB))).status, 204);
    assertOk((await objectKeys(deployment.s3, "partial/")).length > 0);
    const last = await tusPatch(url, 11 * MIB, wrong.slice(11 * MIB));
    assertEquals([last.status, (await errorOf(last)).error], [400, "cid_mismatch"]);
    assertEquals(await objectKeys(deployment.s3, "partial/"), []);
    assertEquals(await objectKeys(deployment.s3, "pieces/"), []);
    assertEquals(await reservedInDatabase(deployment), { rows: 0, bytes: 0 });

    const abandoned = await tusCreated(server.url, { cid: CID, length: FILE.length });
    assertEquals((await tusPatch(abandoned, 0, FILE.slice(0, 6 * MIB))).status, 204);
    assertEquals(await reservedInDatabase(deployment), { rows: 1, bytes: FILE.length });
    clock.advance(24 * 3_600_000 + 1000);
    await eventually(
      async () => (await reservedInDatabase(deployment)).rows === 0,
      "the sweep releases the expired upload's reservation",
    );
    assertEquals((await reservedInDatabase(deployment)).bytes, 0);
    await eventually(
      async () => (await objectKeys(deployment.s3, "partial/")).length === 0,
      "objects gone",
    );
  },
);

scaleOutTest(
  "idle sponsored uploads: one touched through B is kept by A's sweep; one idle on A goes by B's",
  async (deployment) => {
    const clock = new FakeClock(Date.now());
    // No sweep runs by itself: each instance's is run by hand, to say whose let go what.
    const instance = { clock, jobIntervals: { "resumable-expiry": 0 } };
    await using a = await deployment.startInstance(instance);
    await using b = await deployment.startInstance(instance);
    const idle = await tusCreated(a.url, { cid: "bafkidleona", length: 300 });
    const touched = await tusCreated(a.url, { cid: "bafktouchedonb", length: 400 });
    assertEquals(await reservedInDatabase(deployment), { rows: 2, bytes: 700 });
    clock.advance(5 * 60_000);
    const onB = touched.replace(new URL(touched).origin, b.url);
    assertEquals((await tusPatch(onB, 0, seededBytes(100, 93))).status, 204);
    clock.advance(6 * 60_000); // the first idle for 11 minutes, the second for 6
    assertEquals(await b.server.services.resumable.releaseIdleReservations(), 1);
    assertEquals(await reservedInDatabase(deployment), { rows: 1, bytes: 400 });
    assertEquals(await a.server.services.resumable.releaseIdleReservations(), 0);
    assertEquals(await reservedInDatabase(deployment), { rows: 1, bytes: 400 });
    // The first's next byte, on A, takes its reservation again though B let it go.
    assertEquals((await tusPatch(idle, 0, seededBytes(100, 94))).status, 204);
    assertEquals(await reservedInDatabase(deployment), { rows: 2, bytes: 700 });
  },
);

scaleOutTest(
  "tus-js-client aborts, resumes on the other instance's offset, and finishes",
  async (deployment) => {
    await using server = await deployment.startInstance();
    const options = {
      endpoint: `${server.url}/api/tus`,
      metadata: tusMetadata(CID),
      chunkSize: 8 * MIB,
      uploadDataDuringCreation: true,
      urlStorage: new MemoryUrlStorage(),
      removeFingerprintOnSuccess: true,
    };
    const first = await tusUpload(FILE, options, { abortAt: 0.5 });
    assertOk(first.aborted);
    const second = await tusUpload(FILE, options, { resume: true });
    assertEquals(second.url, first.url);
    assertEquals(second.lastResponse!.getHeader("X-Storage-Cid"), CID);
    assertEquals(new Uint8Array(await (await server.get(`/p/${CID}`)).arrayBuffer()), FILE);
  },
);
