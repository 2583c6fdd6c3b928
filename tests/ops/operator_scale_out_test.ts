/**
 * The operator's commands on the scale-out deployment, as real main.ts
 * processes against a real PostgreSQL and a real S3 (Ceph radosgw), beside a
 * server on the same database and bucket:
 *
 * - `token mint | list | revoke` work on the database, and the server honours
 *   each on its next request;
 * - `scrub` finds a rotted object, a missing one and an orphan, the server
 *   answers 503 piece_corrupt until the right bytes are back, and a scrub
 *   then clears the marks;
 * - `backup` writes a standalone data directory, every piece checked against
 *   its SHA-256, that a server serves as it is, with the database's key.
 *
 * These commands get the network and the environment only, no file access:
 * nothing of a PostgreSQL + S3 deployment lives on the machine. Then the
 * mixed deployments the configuration allows (a data directory whose pieces
 * are in a bucket; PostgreSQL with the pieces in a data directory), scrubbed
 * and backed up the same way.
 *
 * Without PostgreSQL or S3 the tests are ignored, except in CI (CI=true).
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, sha256 } from "../helpers/bytes.ts";
import { modeOf, runMain } from "../helpers/main_process.ts";
import type { MainRun } from "../helpers/main_process.ts";
import {
  bearer,
  errorOf,
  jtiOf,
  patternBytes,
  signup,
  startTestServer,
} from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { putObject, s3ServerFlags, signed } from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { postgresClient } from "../helpers/postgres.ts";
import { COMMAND_FLAGS, scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";
import type { ScaleOut } from "../helpers/scale_out.ts";
import { sha256Cid } from "../../src/kernel/piece_cid/mod.ts";
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const ignore = !scaleOutAvailable();

/** A PostgreSQL + S3 deployment: a server, and main.ts commands pointed at the same backends. */
interface Deployment {
  databaseUrl: string;
  bucket: TestBucket;
  server: TestServer;
  /** `main.ts …args` with the deployment's flags, the network and the environment only. */
  command: ScaleOut["command"];
}

async function withDeployment(fn: (deployment: Deployment) => Promise<void>): Promise<void> {
  await using deployment = await scaleOutForTests();
  await using server = await deployment.startInstance();
  const { databaseUrl, s3: bucket, command } = deployment;
  await fn({ databaseUrl, bucket, server, command });
}

async function uploadOk(
  server: TestServer,
  cid: string,
  bytes: Uint8Array<ArrayBuffer>,
  headers: Record<string, string> = {},
): Promise<void> {
  const response = await server.upload(cid, bytes, { headers });
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
}

/** Uploads are answered before their SHA-256 is recorded; the checks below need it. */
async function digestsRecorded(databaseUrl: string): Promise<void> {
  await using sql = postgresClient(databaseUrl, { max: 1 });
  await eventually(async () => {
    const [row] = await sql`SELECT COUNT(*)::int AS n FROM pieces WHERE sha256 IS NULL`;
    return row.n === 0;
  }, "every piece's SHA-256 recorded");
}

function jsonOf(run: MainRun) {
  assertOk(run.code === 0 || run.code === 1, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

async function bytesOf(server: TestServer, cid: string): Promise<Uint8Array> {
  const response = await server.get(`/p/${cid}`);
  assertEquals(response.status, 200, cid);
  return new Uint8Array(await response.arrayBuffer());
}

/** The caller's deals as GET /api/files lists them, without the server's own URL. */
async function filesOf(server: TestServer, token: string): Promise<unknown[]> {
  const response = await server.get("/api/files", { headers: bearer(token) });
  assertEquals(response.status, 200);
  const { files } = await response.json();
  return files.map(({ retrievalUrl: _, ...deal }: Record<string, unknown>) => deal);
}

/** The same bytes, one changed: rot that keeps the size. */
function rotted(bytes: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const copy = bytes.slice();
  copy[copy.length >> 1] ^= 0xff;
  return copy;
}

Deno.test({
  name: "token mint, list and revoke on PostgreSQL: a server on the database honours each at once",
  ignore,
  fn: () =>
    withDeployment(async ({ server, command }) => {
      const minted = await command([
        "token",
        "mint",
        "--email",
        "ops@example.org",
        "--label",
        "ci",
        "--scopes",
        "put,list",
      ]);
      assertEquals(minted.code, 0, minted.stderr);
      const { token, jti } = JSON.parse(minted.stdout);
      // Signed with the key in the database, which the server verifies with.
      await uploadOk(server, "opstokenpg0001", patternBytes(2 * KIB, 1), bearer(token));
      const other = await signup(server, { email: "someone@example.org" });

      const all = JSON.parse((await command(["token", "list"])).stdout).tokens;
      assertEquals(all.map((t: { jti: string }) => t.jti).sort(), [jti, jtiOf(other.token)].sort());
      const listed = await command(["token", "list", "--email", " OPS@example.org "]);
      assertEquals(listed.code, 0, listed.stderr);
      const [mine] = JSON.parse(listed.stdout).tokens;
      assertEquals([mine.jti, mine.email, mine.label, mine.revokedAt], [
        jti,
        "ops@example.org",
        "ci",
        null,
      ]);

      const revoked = await command(["token", "revoke", jti]);
      assertEquals(revoked.code, 0, revoked.stderr);
      assertEquals(JSON.parse(revoked.stdout).revoked, true);
      const refused = await server.get("/api/files", { headers: bearer(token) });
      await assertErrorAnswer(refused, 401, "revoked_token");
      const stillFine = await server.get("/api/files", { headers: bearer(other.token) });
      assertEquals(stillFine.status, 200);
      await stillFine.body?.cancel();

      const unknown = await command(["token", "revoke", "no-such-jti"]);
      assertEquals(unknown.code, 2);
      assertMatch(unknown.stderr, /^error: No token has jti no-such-jti\n$/);
    }),
});

Deno.test({
  name:
    "scrub on PostgreSQL + S3: rot, a missing object and an orphan are found; 503 until repaired",
  ignore,
  fn: () =>
    withDeployment(async ({ databaseUrl, bucket, server, command }) => {
      const verifiable = patternBytes(100 * KIB, 2);
      const pieces = new Map([
        [sha256Cid(await sha256(verifiable)), verifiable],
        ["scrubs3rot0001", patternBytes(300 * KIB, 3)],
        ["scrubs3gone001", patternBytes(5 * KIB, 4)],
      ]);
      for (const [cid, bytes] of pieces) await uploadOk(server, cid, bytes);
      await digestsRecorded(databaseUrl);
      const clean = jsonOf(await command(["scrub"]));
      assertEquals([clean.pieces, clean.passed, clean.orphans], [3, 3, []]);

      const [verifiableCid] = pieces.keys();
      await putObject(bucket, `pieces/${verifiableCid}`, rotted(verifiable));
      await putObject(bucket, "pieces/scrubs3rot0001", rotted(pieces.get("scrubs3rot0001")!));
      const gone = await signed(bucket, `/${bucket.bucket}/pieces/scrubs3gone001`, {
        method: "DELETE",
      });
      assertOk(gone.ok, `delete: ${gone.status}`);
      await gone.body?.cancel();
      await putObject(bucket, "pieces/scrubs3orphan01", patternBytes(KIB, 5));

      const found = await command(["scrub"]);
      assertEquals(found.code, 1, found.stderr);
      const report = jsonOf(found);
      assertEquals(
        report.corrupt.map((c: { cid: string; problem: string }) => [c.cid, c.problem]).sort(),
        [[verifiableCid, "sha256 mismatch"], ["scrubs3rot0001", "sha256 mismatch"]].sort(),
      );
      assertEquals(report.missing.map((m: { cid: string }) => m.cid), ["scrubs3gone001"]);
      assertEquals(report.orphans, ["scrubs3orphan01"]);
      for (const cid of pieces.keys()) {
        await eventually(async () => {
          const response = await server.get(`/p/${cid}`);
          const answer = response.status === 503 ? (await errorOf(response)).error : "";
          if (answer === "") await response.body?.cancel();
          return answer === "piece_corrupt";
        }, `the server refuses ${cid} with piece_corrupt`);
      }

      // The right bytes back (from a backup, say): the next scrub clears every mark.
      for (const [cid, bytes] of pieces) await putObject(bucket, `pieces/${cid}`, bytes);
      const repaired = await command(["scrub"]);
      assertEquals(repaired.code, 0, repaired.stderr);
      assertEquals(jsonOf(repaired).cleared, [...pieces.keys()].sort());
      for (const [cid, bytes] of pieces) assertEquals(await bytesOf(server, cid), bytes);
    }),
});

Deno.test({
  name: "backup of PostgreSQL + S3: a standalone data directory that serves every piece and token",
  ignore,
  fn: () =>
    withDeployment(async ({ databaseUrl, bucket, server, command }) => {
      const user = await signup(server, { email: "keeper@example.org" });
      const old = await signup(server, { email: "keeper@example.org", label: "old laptop" });
      const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
        method: "POST",
        headers: { ...bearer(old.token), "content-type": "application/json" },
        body: JSON.stringify({ jti: jtiOf(old.token) }),
      });
      assertEquals(revoke.status, 200);
      await revoke.body?.cancel();
      const pieces = new Map<string, Uint8Array<ArrayBuffer>>();
      for (
        const [cid, size, seed] of [["pgbackup000001", KIB, 6], ["pgbackup000002", MIB, 7]] as const
      ) {
        pieces.set(cid, patternBytes(size, seed));
        await uploadOk(server, cid, pieces.get(cid)!, bearer(user.token));
      }
      const hashed = patternBytes(70 * KIB, 8);
      pieces.set(sha256Cid(await sha256(hashed)), hashed);
      await uploadOk(server, sha256Cid(await sha256(hashed)), hashed);
      await digestsRecorded(databaseUrl);
      const files = await filesOf(server, user.token);

      await withTempDir("storage-pg-backup-", async (parent) => {
        const destination = `${parent}/copy`;
        const run = await command(["backup", destination], { allowDir: parent });
        assertEquals(run.code, 0, run.stderr);
        const summary = JSON.parse(run.stdout);
        assertEquals([summary.pieces, summary.missing, summary.failed, summary.hmacKey], [
          pieces.size,
          [],
          [],
          true,
        ]);
        assertEquals(
          [destination, `${destination}/storage.db`, `${destination}/hmac.key`].map(modeOf),
          ["700", "600", "600"],
        );
        {
          await using sql = postgresClient(databaseUrl, { max: 1 });
          const [{ key_hex }] = await sql`SELECT key_hex FROM hmac_key WHERE id = 1`;
          assertEquals(
            (await Deno.readTextFile(`${destination}/hmac.key`)).trim(),
            String(key_hex).trim(),
          );
        }
        {
          // A data directory like any other: SQLite, the pieces on disk, the same tokens.
          await using restored = await startTestServer({ dataDir: destination });
          for (const [cid, bytes] of pieces) assertEquals(await bytesOf(restored, cid), bytes);
          assertEquals(await filesOf(restored, user.token), files);
          const refused = await restored.get("/api/files", { headers: bearer(old.token) });
          assertEquals((await errorOf(refused)).error, "revoked_token");
        }

        // Every piece is checked against its SHA-256: rot in the bucket stays out of a backup.
        await putObject(bucket, "pieces/pgbackup000002", rotted(pieces.get("pgbackup000002")!));
        const second = await command(["backup", `${parent}/second`], { allowDir: parent });
        assertEquals(second.code, 1, second.stderr);
        const failed = JSON.parse(second.stdout).failed;
        assertEquals(failed.map((f: { cid: string }) => f.cid), ["pgbackup000002"]);
        assertMatch(failed[0].problem, /do not match their recorded SHA-256/);
      });
    }),
});

Deno.test({
  name:
    "the mixed deployments: scrub and backup a data directory with a bucket, and PostgreSQL with a data directory",
  ignore,
  async fn() {
    // The scale-out deployment's backends, each with a data directory instead of the other.
    await using backends = await scaleOutForTests();
    const mixes: { name: string; args: string[]; env: Record<string, string> }[] = [
      { name: "SQLite + S3", args: s3ServerFlags(backends.s3), env: backends.env },
      { name: "PostgreSQL + disk", args: ["--database", backends.databaseUrl], env: {} },
    ];
    await withTempDir("storage-mixed-", async (parent) => {
      for (const [n, mix] of mixes.entries()) {
        const dataDir = `${parent}/live${n}`;
        const flags = [...COMMAND_FLAGS, `--allow-read=${parent}`, `--allow-write=${parent}`];
        const run = (args: string[]) =>
          runMain([...args, "--data-dir", dataDir, ...mix.args], { flags, env: mix.env });
        await using server = await startTestServer({ dataDir, args: mix.args, env: mix.env });
        const pieces = new Map([
          [`mixed${n}piece0001`, patternBytes(3 * KIB, n)],
          [`mixed${n}piece0002`, patternBytes(200 * KIB, n + 1)],
        ]);
        for (const [cid, bytes] of pieces) await uploadOk(server, cid, bytes);

        const scrubbed = await run(["scrub"]);
        assertEquals(scrubbed.code, 0, `${mix.name}: ${scrubbed.stderr}`);
        assertEquals(jsonOf(scrubbed).passed, pieces.size, mix.name);
        const minted = await run(["token", "mint", "--email", "mix@example.org", "--label", "x"]);
        assertEquals(minted.code, 0, `${mix.name}: ${minted.stderr}`);
        const listed = JSON.parse((await run(["token", "list"])).stdout).tokens;
        assertEquals(listed.length, 1, mix.name);

        const backedUp = await run(["backup", `${parent}/copy${n}`]);
        assertEquals(backedUp.code, 0, `${mix.name}: ${backedUp.stderr}`);
        assertEquals(JSON.parse(backedUp.stdout).pieces, pieces.size, mix.name);
        await using restored = await startTestServer({ dataDir: `${parent}/copy${n}` });
        for (const [cid, bytes] of pieces) assertEquals(await bytesOf(restored, cid), bytes);
        const files = await restored.get("/api/files", {
          headers: bearer(JSON.parse(minted.stdout).token),
        });
        assertEquals(files.status, 200, `${mix.name}: the minted token works on the copy`);
        await files.body?.cancel();
      }
    });
  },
});
