/**
 * `main.ts migrate`, end to end: a real server fills a data directory (uploads,
 * a token user, a token minted by the operator, a revoked one), stops, and
 * the command — a real subprocess with real permission flags — moves it into
 * a real PostgreSQL and a second data directory. A server started on the
 * targets then serves every piece byte for byte, accepts the old tokens
 * (same HMAC key) and refuses the revoked one, lists the deals and carries the
 * usage counters. Reruns copy only what is missing and write no row twice;
 * rotted bytes are refused; bad input changes nothing.
 *
 * Without PostgreSQL the tests that need it are ignored, except in CI
 * (CI=true), where its absence is a failure.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, sha256 } from "../helpers/bytes.ts";
import { runMain } from "../helpers/main_process.ts";
import { bearer, jtiOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { flipByte, pieceFile } from "../helpers/pieces.ts";
import { s3ForTests, s3ServerFlags, s3ServerKeys, s3UnavailableReason } from "../helpers/s3.ts";
import { postgresAvailable, postgresClient, postgresForTests } from "../helpers/postgres.ts";
import type { TestDatabase } from "../helpers/postgres.ts";
import { PostgresDatabase } from "../../src/db/postgres/postgres_database.ts";
import { openDatabase } from "../../src/db/sqlite/database.ts";
import { MIGRATIONS } from "../../src/db/sqlite/migrations/mod.ts";
import { silentLogger } from "../../src/kernel/log.ts";
import { sha256Cid } from "../../src/kernel/piece_cid/mod.ts";
import { DiskStore } from "../../src/driver/disk/disk_store.ts";
import { migrateDataDir } from "../../src/ops/migrate.ts";
import { pathExists } from "../../src/kernel/fs/files.ts";
import { SqliteRowSource } from "../../src/db/sqlite/row_copy.ts";
import { carOf, rawBlock } from "../helpers/ipfs.ts";

const ignore = !postgresAvailable();
const s3Unavailable = s3UnavailableReason();
if (!ignore && s3Unavailable !== null) {
  console.warn(`migrate test into S3 ignored: ${s3Unavailable}`);
}

// ---------------------------------------------------------------------------------------------
// The source: a data directory a real server made

interface Source {
  dir: string;
  /** Every stored piece's bytes by cid. */
  pieces: Map<string, Uint8Array<ArrayBuffer>>;
  /** The signed-up user's token, its deals (as GET /api/files listed them) and usage. */
  userToken: string;
  userFiles: unknown[];
  userUsage: unknown;
  /** Minted by the operator (`main.ts token mint`). */
  mintedToken: string;
  /** Revoked before the migration. */
  revokedToken: string;
  /** A sponsored piece whose SHA-256 the source records (its cid is verifiable too). */
  hashedCid: string;
  /** A piece the user uploaded (its deal is the user's). */
  userCid: string;
  /** Every piece's cid, PieceCIDv2 and v1 as the source records them. */
  pieceCids: Record<string, unknown>[];
}

async function makeSource(): Promise<Source> {
  const dir = await Deno.makeTempDir({ prefix: "migrate-source-" });
  await using server = await startTestServer({ dataDir: dir });
  const pieces = new Map<string, Uint8Array<ArrayBuffer>>();
  const sponsored = [
    ["migrateop000001", patternBytes(KIB, 1)],
    ["migrateop000002", patternBytes(64 * KIB + 1, 2)],
  ] as const;
  for (const [cid, bytes] of sponsored) await uploadOk(server, cid, bytes, pieces);
  const hashedBytes = patternBytes(300 * KIB, 3);
  const hashedCid = sha256Cid(await sha256(hashedBytes));
  await uploadOk(server, hashedCid, hashedBytes, pieces);
  // A CAR: its two blocks are in the block index, which moves with the pieces.
  const blocks = [await rawBlock(patternBytes(3 * KIB, 8)), await rawBlock(patternBytes(KIB, 9))];
  await uploadOk(server, "migratecar00001", await carOf([blocks[0].cid], blocks), pieces, {
    "content-type": "application/vnd.ipld.car",
  });

  const user = await signup(server, { email: "mover@example.org" });
  const headers = bearer(user.token);
  await uploadOk(server, "migratetok00001", patternBytes(5 * KIB, 4), pieces, headers);
  await uploadOk(server, "migratetok00002", patternBytes(MIB, 5), pieces, headers);
  // A second deal for a piece already stored: a deal row without a new piece row.
  await uploadOk(server, "migrateop000001", patternBytes(KIB, 1), pieces, headers);

  const revoked = await signup(server, { email: "mover@example.org", label: "old laptop" });
  const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: { ...bearer(revoked.token), "content-type": "application/json" },
    body: JSON.stringify({ jti: jtiOf(revoked.token) }),
  });
  assertEquals(revoke.status, 200, await revoke.clone().text());
  await revoke.body?.cancel();

  const minted = await runMain(
    ["token", "mint", "--email", "ops@example.org", "--label", "ci", "--data-dir", dir],
    { dataDir: dir },
  );
  assertEquals(minted.code, 0, minted.stderr);
  await uploadOk(server, "migrateops00001", patternBytes(2 * KIB, 6), pieces, {
    ...bearer(JSON.parse(minted.stdout).token),
  });

  // Digests and PieceCIDv2s are computed after the upload's answer; the tests need them recorded.
  await eventually(
    () =>
      countRows(
        server,
        "SELECT COUNT(*) AS n FROM pieces WHERE sha256 IS NULL OR piece_cid_v2 IS NULL",
      ) === 0,
    "every piece's SHA-256 and PieceCIDv2 recorded",
  );
  const pieceCids = server.server.db.prepare(PIECE_CIDS).all().map((row) => ({ ...row }));
  const userFiles = await filesOf(server.url, user.token);
  const userUsage = await getJson(server.url, "/api/usage", user.token);
  return {
    dir,
    pieces,
    userToken: user.token,
    userFiles,
    userUsage,
    mintedToken: JSON.parse(minted.stdout).token,
    revokedToken: revoked.token,
    hashedCid,
    userCid: "migratetok00002",
    pieceCids,
  };
}

async function uploadOk(
  server: TestServer,
  cid: string,
  bytes: Uint8Array<ArrayBuffer>,
  pieces: Map<string, Uint8Array<ArrayBuffer>>,
  headers: Record<string, string> = {},
): Promise<void> {
  const response = await server.upload(cid, bytes, { headers });
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
  pieces.set(cid, bytes);
}

const PIECE_CIDS = "SELECT cid, piece_cid_v2, piece_cid_v1 FROM pieces ORDER BY cid";

function countRows(server: TestServer, sql: string): number {
  return Number((server.server.db.prepare(sql).get() as { n: number }).n);
}

/** The caller's deals as GET /api/files lists them, without the server-specific URL. */
async function filesOf(base: string, token: string): Promise<unknown[]> {
  const { files } = await getJson(base, "/api/files", token);
  return files.map(({ retrievalUrl: _, ...deal }: Record<string, unknown>) => deal);
}

async function getJson(base: string, path: string, token: string) {
  const response = await fetch(`${base}${path}`, { headers: bearer(token) });
  assertEquals(response.status, 200, await response.clone().text());
  return await response.json();
}

// ---------------------------------------------------------------------------------------------
// Running the command

interface MigrateRun {
  code: number;
  stderr: string;
  // deno-lint-ignore no-explicit-any -- the JSON summary, checked field by field
  summary: any;
}

/**
 * `main.ts migrate` with the network and exactly the permissions the docs
 * give it: the source directory read, target directories read and written.
 */
async function migrate(
  args: string[],
  dirs: { source: string; targets?: string[] },
): Promise<MigrateRun> {
  const targets = dirs.targets ?? [];
  const run = await runMain(["migrate", ...args], {
    flags: [
      "--allow-net",
      "--allow-env=STORAGE_*,PG*",
      `--allow-read=${[dirs.source, ...targets].join(",")}`,
      ...(targets.length > 0 ? [`--allow-write=${targets.join(",")}`] : []),
    ],
  });
  const summary = run.code === 2 ? null : JSON.parse(run.stdout);
  return { code: run.code, stderr: run.stderr, summary };
}

/** A database of the test's own (on the file's one PostgreSQL server), dropped after it. */
async function withPostgres(fn: (database: TestDatabase) => Promise<void>): Promise<void> {
  await using database = await postgresForTests();
  await fn(database);
}

/** One query against the target database, on a connection of its own. */
async function query(url: string, text: string): Promise<Record<string, unknown>[]> {
  await using sql = postgresClient(url, { max: 1 });
  return [...await sql.unsafe(text)];
}

async function removeDirs(...dirs: string[]): Promise<void> {
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/** What a test of the command starts from: a database of its own, a source, a target's place. */
interface Migration {
  pg: TestDatabase;
  source: Source;
  /** A directory beside the source for a target data directory (made by the command, if used). */
  target: string;
}

/** Runs fn on a fresh database and source; removes the source and the target after it. */
function withSource(fn: (migration: Migration) => Promise<void>): () => Promise<void> {
  return () =>
    withPostgres(async (pg) => {
      const source = await makeSource();
      const target = `${source.dir}-target`;
      try {
        await fn({ pg, source, target });
      } finally {
        await removeDirs(source.dir, target);
      }
    });
}

/** Runs fn on a fresh database and an empty source directory; removes it and the target after it. */
function withEmptySource(
  prefix: string,
  fn: (migration: { pg: TestDatabase; dir: string; target: string }) => Promise<void>,
): () => Promise<void> {
  return () =>
    withPostgres(async (pg) => {
      const dir = await Deno.makeTempDir({ prefix });
      const target = `${dir}-target`;
      try {
        await fn({ pg, dir, target });
      } finally {
        await removeDirs(dir, target);
      }
    });
}

/** The summary's count of rows written: those named, and none of the others. */
function rowsWritten(counts: Partial<Record<string, number>> = {}) {
  return { pieces: 0, deals: 0, usage: 0, tokens: 0, corruptMarks: 0, blocks: 0, ...counts };
}

// ---------------------------------------------------------------------------------------------

Deno.test({
  name: "migrate: SQLite + disk into PostgreSQL + a new directory; the targets serve it all",
  ignore,
  fn: withSource(async ({ pg, source, target }) => {
    const run = await migrate(
      ["--from-data-dir", source.dir, "--database", pg.url, "--data-dir", target],
      { source: source.dir, targets: [target] },
    );
    assertEquals(run.code, 0, run.stderr);
    const { summary } = run;
    assertEquals(summary.pieces.copied, source.pieces.size);
    assertEquals([summary.pieces.skipped, summary.pieces.failed], [0, []]);
    assertEquals(summary.rows, {
      pieces: source.pieces.size,
      deals: source.pieces.size + 1,
      usage: 3, // the sponsored client's address, the user, the operator's user
      tokens: 3,
      corruptMarks: 0,
      blocks: 2,
    });
    assertEquals(summary.hmacKey, "adopted");
    assertEquals(summary.deferred, { deals: 0, corruptMarks: 0, blocks: 0 });
    assertEquals(summary.warnings, []);
    assertEquals(summary.targets.store, `disk at ${target}/pieces`);
    // The pieces' PieceCIDv2 and v1 came along: /piece/ finds them at once on the targets.
    assertEquals(await query(pg.url, PIECE_CIDS), source.pieceCids);

    await using server = await startTestServer({
      dataDir: target,
      args: ["--database", pg.url],
    });
    for (const [cid, bytes] of source.pieces) {
      const response = await server.get(`/p/${cid}`);
      assertEquals(response.status, 200, cid);
      assertEquals(new Uint8Array(await response.arrayBuffer()), bytes, cid);
    }
    // The CAR's blocks are found through the moved block index, read from the moved piece.
    const block = await rawBlock(patternBytes(KIB, 9));
    const served = await server.get(`/ipfs/${block.cid}?format=raw`);
    assertEquals(new Uint8Array(await served.arrayBuffer()), block.bytes);
    // The same HMAC key: the old tokens verify; the revocation came along.
    assertEquals(
      await filesOf(server.url, source.userToken),
      source.userFiles,
    );
    assertEquals(await getJson(server.url, "/api/usage", source.userToken), source.userUsage);
    assertEquals((await getJson(server.url, "/api/files", source.mintedToken)).files.length, 1);
    const revoked = await server.get("/api/files", { headers: bearer(source.revokedToken) });
    assertEquals(revoked.status, 401);
    assertEquals((await revoked.json()).error, "revoked_token");
    // Uploads keep working on the targets, counted on top of the carried usage.
    const more = await server.upload("migrateafter001", "after the move", {
      headers: bearer(source.userToken),
    });
    assertEquals(more.status, 200, await more.clone().text());
    await more.body?.cancel();
  }),
});

Deno.test({
  name: "migrate: a missing piece is named (exit 1); the rerun copies only it; then a no-op",
  ignore,
  fn: withSource(async ({ pg, source, target }) => {
    const args = ["--from-data-dir", source.dir, "--database", pg.url, "--data-dir", target];
    const file = pieceFile(source.dir, source.userCid);
    await Deno.rename(file, `${source.dir}/aside`);
    const first = await migrate([...args, "--concurrency", "2"], {
      source: source.dir,
      targets: [target],
    });
    assertEquals(first.code, 1, first.stderr);
    assertEquals(first.summary.pieces.failed, [
      { cid: source.userCid, reason: "its file is missing in the source" },
    ]);
    assertEquals(first.summary.pieces.copied, source.pieces.size - 1);
    assertEquals(first.summary.rows.pieces, source.pieces.size - 1);
    // Its deal waits for its bytes: no row names a piece the target lacks.
    assertEquals(first.summary.deferred, { deals: 1, corruptMarks: 0, blocks: 0 });
    assertEquals(
      await query(pg.url, `SELECT cid FROM deals WHERE cid = '${source.userCid}'`),
      [],
    );

    await Deno.rename(`${source.dir}/aside`, file);
    const second = await migrate(args, { source: source.dir, targets: [target] });
    assertEquals(second.code, 0, second.stderr);
    assertEquals(second.summary.pieces, {
      copied: 1,
      skipped: source.pieces.size - 1,
      bytesCopied: MIB,
      failed: [],
      carriedCorrupt: [],
      carriedRemoved: 0,
    });
    assertEquals(second.summary.rows, rowsWritten({ pieces: 1, deals: 1 }));
    assertEquals(second.summary.hmacKey, "kept");

    const third = await migrate(args, { source: source.dir, targets: [target] });
    assertEquals(third.code, 0, third.stderr);
    assertEquals([third.summary.pieces.copied, third.summary.pieces.skipped], [
      0,
      source.pieces.size,
    ]);
    assertEquals(third.summary.rows, rowsWritten());
    assertEquals(third.summary.updated, { pieces: 0, deals: 0, usage: 0, tokens: 0 });

    const [counts] = await query(
      pg.url,
      `SELECT (SELECT COUNT(*) FROM pieces) AS pieces, (SELECT COUNT(*) FROM deals) AS deals,
              (SELECT COUNT(*) FROM tokens) AS tokens`,
    );
    assertEquals(counts, {
      pieces: String(source.pieces.size),
      deals: String(source.pieces.size + 1),
      tokens: "3",
    });
  }),
});

Deno.test({
  name: "migrate: rotted bytes are refused; once scrub marked them, row and mark are carried",
  ignore,
  fn: withSource(async ({ pg, source, target }) => {
    const args = ["--from-data-dir", source.dir, "--database", pg.url, "--data-dir", target];
    await flipByte(pieceFile(source.dir, source.hashedCid), 1000);
    const refused = await migrate(args, { source: source.dir, targets: [target] });
    assertEquals(refused.code, 1, refused.stderr);
    assertEquals(refused.summary.pieces.failed.length, 1);
    assertEquals(refused.summary.pieces.failed[0].cid, source.hashedCid);
    assertMatch(refused.summary.pieces.failed[0].reason, /do not match their recorded SHA-256/);
    assertOk(!await pathExists(pieceFile(target, source.hashedCid)), "rotted bytes copied");
    assertEquals(
      await query(pg.url, `SELECT cid FROM pieces WHERE cid = '${source.hashedCid}'`),
      [],
    );

    // The source's own scrub marks it: the source answers 503 for it, and so will the target.
    const scrub = await runMain(["scrub", "--data-dir", source.dir], { dataDir: source.dir });
    assertEquals(scrub.code, 1, scrub.stderr);
    const carried = await migrate(args, { source: source.dir, targets: [target] });
    assertEquals(carried.code, 0, carried.stderr);
    assertEquals(carried.summary.pieces.carriedCorrupt, [source.hashedCid]);
    assertEquals([carried.summary.rows.pieces, carried.summary.rows.corruptMarks], [1, 1]);

    await using server = await startTestServer({
      dataDir: target,
      args: ["--database", pg.url],
    });
    const answer = await server.get(`/p/${source.hashedCid}`);
    assertEquals(answer.status, 503);
    assertEquals((await answer.json()).error, "piece_corrupt");
    // The right bytes uploaded again repair it on the targets, as on the source.
    const repair = await server.upload(source.hashedCid, source.pieces.get(source.hashedCid)!);
    assertEquals(repair.status, 200, await repair.clone().text());
    await repair.body?.cancel();
    const repaired = await server.get(`/p/${source.hashedCid}`);
    assertEquals(
      new Uint8Array(await repaired.arrayBuffer()),
      source.pieces.get(source.hashedCid),
    );
  }),
});

Deno.test({
  name: "migrate: a first run beside the serving source, the final one after it stopped; " +
    "with --database only, the pieces stay where they are",
  ignore,
  fn: withSource(async ({ pg, source }) => {
    const args = ["--from-data-dir", source.dir, "--database", pg.url];
    let latestUsage: unknown;
    {
      await using serving = await startTestServer({ dataDir: source.dir });
      const early = await migrate(args, { source: source.dir });
      assertEquals(early.code, 0, early.stderr);
      assertEquals([early.summary.pieces.copied, early.summary.pieces.skipped], [
        0,
        source.pieces.size,
      ]);
      assertEquals(early.summary.rows.pieces, source.pieces.size);
      assertEquals(early.summary.warnings.length, 1);
      assertMatch(
        early.summary.warnings[0],
        /in use by process .*stop it before the final run/,
      );
      // The source keeps serving: a new piece, and the user's counter for today grows.
      await uploadOk(serving, "migratelate0001", patternBytes(3 * KIB, 7), source.pieces, {
        ...bearer(source.userToken),
      });
      latestUsage = await getJson(serving.url, "/api/usage", source.userToken);
    }
    const final = await migrate(args, { source: source.dir });
    assertEquals(final.code, 0, final.stderr);
    assertEquals(final.summary.warnings, []);
    assertEquals(final.summary.rows, rowsWritten({ pieces: 1, deals: 1 }));
    assertEquals(final.summary.updated, { pieces: 0, deals: 0, usage: 1, tokens: 0 });

    await using server = await startTestServer({
      dataDir: source.dir,
      args: ["--database", pg.url],
    });
    for (const [cid, bytes] of source.pieces) {
      assertEquals(new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer()), bytes);
    }
    assertEquals(await getJson(server.url, "/api/usage", source.userToken), latestUsage);
  }),
});

Deno.test({
  name: "migrate: into PostgreSQL + an S3 bucket, or the pieces alone into a bucket",
  ignore: ignore || s3Unavailable !== null,
  fn: withSource(async ({ pg, source }) => {
    await using shared = await s3ForTests();
    await using piecesOnly = await s3ForTests();
    // The keys come from the environment only (as for the server), which the command inherits.
    const keys = s3ServerKeys(shared);
    const args = ["--from-data-dir", source.dir, "--database", pg.url, ...s3ServerFlags(shared)];
    try {
      for (const [name, value] of Object.entries(keys)) Deno.env.set(name, value);
      const first = await migrate(args, { source: source.dir });
      assertEquals(first.code, 0, first.stderr);
      assertEquals(first.summary.pieces.copied, source.pieces.size);
      assertEquals(first.summary.rows.pieces, source.pieces.size);
      assertEquals(
        first.summary.targets.store,
        `s3 bucket ${shared.bucket} at ${shared.endpoint}`,
      );
      const again = await migrate(args, { source: source.dir });
      assertEquals(again.code, 0, again.stderr);
      assertEquals([again.summary.pieces.copied, again.summary.pieces.skipped], [
        0,
        source.pieces.size,
      ]);
      {
        await using server = await startTestServer({
          args: ["--database", pg.url, ...s3ServerFlags(shared)],
          env: keys,
        });
        for (const [cid, bytes] of source.pieces) {
          const response = await server.get(`/p/${cid}`);
          assertEquals(response.status, 200, cid);
          assertEquals(new Uint8Array(await response.arrayBuffer()), bytes, cid);
        }
        assertEquals(await filesOf(server.url, source.userToken), source.userFiles);
      }

      // Without --database the rows stay in DIR/storage.db; only the bytes move.
      const alone = await migrate(["--from-data-dir", source.dir, ...s3ServerFlags(piecesOnly)], {
        source: source.dir,
      });
      assertEquals(alone.code, 0, alone.stderr);
      assertEquals(alone.summary.pieces.copied, source.pieces.size);
      assertEquals(alone.summary.rows, rowsWritten());
      assertEquals(alone.summary.hmacKey, "not moved");
      await using server = await startTestServer({
        dataDir: source.dir,
        args: s3ServerFlags(piecesOnly),
        env: keys,
      });
      const [cid, bytes] = [...source.pieces][0];
      const response = await server.get(`/p/${cid}`);
      assertEquals(response.headers.get("x-service-source"), "r2");
      assertEquals(new Uint8Array(await response.arrayBuffer()), bytes);
    } finally {
      for (const name of Object.keys(keys)) Deno.env.delete(name);
    }
  }),
});

Deno.test({
  name: "migrate: rows read and written in small chunks come out the same (in-process)",
  ignore,
  fn: withSource(async ({ pg, source, target }) => {
    const sourceDb = openDatabase({ path: `${source.dir}/storage.db` });
    const postgres = await PostgresDatabase.open({ url: pg.url, logger: silentLogger });
    try {
      const summary = await migrateDataDir({
        source: new SqliteRowSource(sourceDb),
        sourceStore: new DiskStore({ root: `${source.dir}/pieces` }),
        targetStore: await DiskStore.create({ root: `${target}/pieces` }),
        targetDatabase: postgres,
        sourceKeyHex: (await Deno.readTextFile(`${source.dir}/hmac.key`)).trim(),
        concurrency: 3,
        chunkRows: 2,
      });
      const sourceCount = (table: string) =>
        Number((sourceDb.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);
      assertEquals(summary.rows, {
        pieces: sourceCount("pieces"),
        deals: sourceCount("deals"),
        usage: sourceCount("usage_daily"),
        tokens: sourceCount("tokens"),
        corruptMarks: 0,
        blocks: sourceCount("blocks"),
      });
      const [usage] = await postgres.sql`SELECT SUM(bytes) AS bytes, SUM(uploads) AS uploads,
        SUM(reserved_bytes) AS reserved FROM usage_daily`;
      const sourceUsage = sourceDb.prepare(
        "SELECT SUM(bytes) AS bytes, SUM(uploads) AS uploads FROM usage_daily",
      ).get() as { bytes: number; uploads: number };
      assertEquals(
        [Number(usage.bytes), Number(usage.uploads), Number(usage.reserved)],
        [sourceUsage.bytes, sourceUsage.uploads, 0],
      );
    } finally {
      await postgres.close();
      sourceDb.close();
    }
  }),
});

Deno.test("migrate: bad input is one line `error: …`, exit 2, and writes nothing", async () => {
  const root = await Deno.makeTempDir({ prefix: "migrate-bad-" });
  const source = `${root}/source`;
  const target = `${root}/target`;
  // Never contacted: every refusal comes before a connection.
  const database = "postgres://nobody:secret@127.0.0.1:9/none";
  try {
    await Deno.mkdir(`${source}/pieces`, { recursive: true });
    await Deno.writeFile(`${source}/storage.db`, new Uint8Array());
    const before = await listTree(root);
    const cases: [string[], RegExp][] = [
      [["--from-data-dir", source], /nothing to migrate/],
      [["--from-data-dir", source, "--data-dir", source], /nothing to migrate/],
      [["--from-data-dir", source, "--data-dir", target], /can only move to --store s3/],
      [["--from-data-dir", source, "--database", database, "--bogus"], /bogus/],
      [["--database", database, "--data-dir", target], /needs --from-data-dir/],
      [
        ["--from-data-dir", `${root}/missing`, "--database", database, "--data-dir", target],
        /missing\/storage\.db/,
      ],
      [["--from-data-dir", source, "--database", database, "--concurrency", "0"], /concurrency/],
      [["--from-data-dir", source, "--database", "mysql://x"], /postgres/],
      [["--from-data-dir", source, "--store", "s3"], /--s3-endpoint/],
    ];
    for (const [args, message] of cases) {
      const run = await runMain(["migrate", ...args], {
        flags: [
          "--allow-net",
          "--allow-env=STORAGE_*,PG*",
          `--allow-read=${root}`,
          "--allow-write",
        ],
      });
      assertEquals(run.code, 2, `${args.join(" ")}: ${run.stdout}${run.stderr}`);
      assertEquals(run.stdout, "");
      assertEquals(run.stderr.trim().split("\n").length, 1, run.stderr);
      assertMatch(run.stderr, /^error: /);
      assertMatch(run.stderr, message);
      assertEquals(await listTree(root), before, `${args.join(" ")} wrote something`);
    }
  } finally {
    await removeDirs(root);
  }
});

/** Every path under a directory with its size, sorted: what a refused run must not change. */
async function listTree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    const { size } = await Deno.stat(`${dir}/${path}`);
    out.push(`${path} ${entry.isDirectory ? "dir" : size}`);
    if (entry.isDirectory) out.push(...await listTree(dir, path));
  }
  return out.sort();
}

Deno.test({
  name: "migrate: a source of an older build is refused, not upgraded under its server",
  ignore,
  fn: withEmptySource("migrate-old-", async ({ pg, dir: root }) => {
    await Deno.mkdir(`${root}/pieces`);
    openDatabase({ path: `${root}/storage.db`, migrations: MIGRATIONS.slice(0, -1) }).close();
    const before = await Deno.readFile(`${root}/storage.db`);
    const run = await migrate(["--from-data-dir", root, "--database", pg.url], {
      source: root,
    });
    assertEquals(run.code, 2, run.stderr);
    assertMatch(run.stderr, /^error: .*older build .*start this build's server on/);
    // Not brought up to date (SQLite may have made its -wal and -shm beside it to read).
    assertEquals(await Deno.readFile(`${root}/storage.db`), before, "the source was written");
    assertEquals(await query(pg.url, "SELECT count(*)::int AS n FROM pieces"), [{ n: 0 }]);
  }),
});

Deno.test({
  name: "migrate: deleted deals and removed pieces travel as they are; the targets answer 410",
  ignore,
  fn: withEmptySource("migrate-lifecycle-", async ({ pg, dir, target }) => {
    const kept = patternBytes(3 * KIB, 21);
    const gone = patternBytes(4 * KIB, 22);
    let token: string;
    {
      await using server = await startTestServer({ dataDir: dir });
      token = (await signup(server, { email: "leaver@example.org" })).token;
      const headers = bearer(token);
      await uploadOk(server, "migratekept0001", kept, new Map(), headers);
      const response = await server.upload("migrategone0001", gone, { headers });
      const { dealId } = await response.json();
      const deleted = await server.get(`/api/deals/${dealId}`, { method: "DELETE", headers });
      assertEquals(deleted.status, 200);
      await deleted.body?.cancel();
      const swept = await server.server.gc.sweep({ asOf: Date.now() + 30 * 86_400_000 });
      assertEquals(swept?.removedPieces, 1);
    }
    const run = await migrate(
      ["--from-data-dir", dir, "--database", pg.url, "--data-dir", target],
      { source: dir, targets: [target] },
    );
    assertEquals(run.code, 0, run.stderr);
    assertEquals([run.summary.pieces.copied, run.summary.pieces.carriedRemoved], [1, 1]);
    await using server = await startTestServer({
      dataDir: target,
      args: ["--database", pg.url],
    });
    assertEquals((await server.get("/p/migratekept0001")).status, 200);
    const removed = await server.get("/p/migrategone0001");
    assertEquals([removed.status, (await removed.json()).error], [410, "gone"]);
    const files = await getJson(server.url, "/api/files", token);
    assertEquals(
      files.files.map((f: { cid: string; state: string }) => `${f.cid} ${f.state}`),
      ["migrategone0001 deleted", "migratekept0001 active"],
    );
  }),
});

Deno.test({
  name: "migrate: a CAR removed in the source after a first run takes its blocks from the target",
  ignore,
  fn: withEmptySource("migrate-car-gone-", async ({ pg, dir, target }) => {
    const blocks = [
      await rawBlock(patternBytes(2 * KIB, 23)),
      await rawBlock(patternBytes(KIB, 24)),
    ];
    const car = await carOf([blocks[0].cid], blocks);
    const blockCount = async () =>
      (await query(pg.url, `SELECT count(*)::int AS n FROM blocks`))[0].n;
    let dealId: string;
    {
      await using server = await startTestServer({ dataDir: dir });
      const response = await server.upload("migratecargone1", car, {
        contentType: "application/vnd.ipld.car",
      });
      assertEquals(response.status, 200, await response.clone().text());
      dealId = (await response.json()).dealId;
    }
    const args = ["--from-data-dir", dir, "--database", pg.url, "--data-dir", target];
    const first = await migrate(args, { source: dir, targets: [target] });
    assertEquals([first.code, first.summary.rows.blocks], [0, 2], first.stderr);
    {
      // The source serves on and removes the CAR (its deal long ended) before the rerun.
      await using server = await startTestServer({ dataDir: dir });
      const swept = await server.server.gc.sweep({ asOf: Date.now() + 60 * 86_400_000 });
      assertEquals(swept?.removedPieces, 1, dealId);
    }
    const rerun = await migrate(args, { source: dir, targets: [target] });
    assertEquals(rerun.code, 0, rerun.stderr);
    assertEquals(await blockCount(), 0, "a block lives while its piece does");
    await using server = await startTestServer({
      dataDir: target,
      args: ["--database", pg.url],
    });
    assertEquals((await server.get("/p/migratecargone1")).status, 410);
    for (const block of blocks) {
      const answer = await server.get(`/ipfs/${block.cid}?format=raw`);
      assertEquals(answer.status, 404, `${block.cid}`);
      await answer.body?.cancel();
    }
  }),
});
