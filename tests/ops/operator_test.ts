/**
 * What the operator runs on the server machine: one server per data
 * directory, `token mint|list|revoke` beside a running server, private file
 * modes, and start-up errors as one line with exit status 2.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { readResponse, uploadHead, writeAll } from "../helpers/raw_http.ts";
import { bearer, patternBytes, startTestServer } from "../helpers/server.ts";
import { startTaskFlags } from "../../scripts/lib/spawn_server.ts";
import { eventually } from "../helpers/wait.ts";
import { modeOf, runMain } from "../helpers/main_process.ts";
import type { MainRun } from "../helpers/main_process.ts";
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

/** A start-up failure: status 2, exactly one line on stderr, `error: …`, no stack trace. */
function assertOneLineError(run: MainRun, pattern: RegExp): void {
  assertEquals(run.code, 2, run.stderr);
  const lines = run.stderr.trimEnd().split("\n");
  assertEquals(lines.length, 1, run.stderr);
  assertMatch(lines[0], /^error: /);
  assertMatch(lines[0], pattern);
  assertEquals(/\bat .*:\d+:\d+/.test(run.stderr), false, "no stack trace");
}

Deno.test("data dir: a second server exits 2 at once and the first's upload in flight finishes", async () => {
  await using server = await startTestServer();
  const body = patternBytes(256 * 1024);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  try {
    await writeAll(conn, uploadHead("secondstart01", body.length));
    await writeAll(conn, body.subarray(0, 1000));
    // The upload is in the handler, its temp file open in pieces/tmp.
    await eventually(
      async () => (await (await server.get("/healthz")).json()).uploads.inFlight === 1,
      "the upload in its handler",
    );
    const second = await runMain(["--port", "0", "--data-dir", server.dataDir], {
      dataDir: server.dataDir,
    });
    assertOneLineError(second, new RegExp(`in use by process ${Deno.pid}`));

    await writeAll(conn, body.subarray(1000));
    const answer = await readResponse(conn);
    assertEquals(answer.status, 200, answer.body);
  } finally {
    conn.close();
  }
  const stored = await server.get("/p/secondstart01");
  assertEquals(new Uint8Array(await stored.arrayBuffer()), body);
});

Deno.test("token mint/revoke on a running server's data dir take effect at once", async () => {
  await using server = await startTestServer();
  const minted = await runMain(
    [
      "token",
      "mint",
      "--email",
      " Ops@Example.ORG ",
      "--label",
      "ci",
      "--scopes",
      "put,list",
      "--data-dir",
      server.dataDir,
    ],
    { dataDir: server.dataDir },
  );
  assertEquals(minted.code, 0, minted.stderr);
  // stdout carries only the signup result, as JSON, for scripts to read.
  const result = JSON.parse(minted.stdout);
  assertEquals(
    Object.keys(result).sort(),
    ["email", "expiresAt", "jti", "quotaMb", "scopes", "token", "userId"],
  );
  assertEquals([result.email, result.scopes], ["ops@example.org", ["put", "list"]]);

  const upload = await server.upload("tokenclimint1", "minted by the operator", {
    headers: bearer(result.token),
  });
  assertEquals(upload.status, 200);
  assertEquals((await upload.json()).owner, "ops@example.org");

  const listed = await runMain([
    "token",
    "list",
    "--email",
    "ops@example.org",
    "--data-dir",
    server.dataDir,
  ], {
    dataDir: server.dataDir,
  });
  assertEquals(listed.code, 0, listed.stderr);
  assertEquals(JSON.parse(listed.stdout).tokens.map((t: { jti: string }) => t.jti), [result.jti]);

  const revoked = await runMain(["token", "revoke", result.jti, "--data-dir", server.dataDir], {
    dataDir: server.dataDir,
  });
  assertEquals(revoked.code, 0, revoked.stderr);
  assertEquals(JSON.parse(revoked.stdout).revoked, true);
  const after = await server.get("/api/files", { headers: bearer(result.token) });
  await assertErrorAnswer(after, 401, "revoked_token");
});

Deno.test("token commands: bad fields and unknown actions are one line, exit 2", async () => {
  await withTempDir("storage-token-cli-", async (dataDir) => {
    assertOneLineError(
      await runMain(["token", "mint", "--email", "nope", "--label", "x", "--data-dir", dataDir], {
        dataDir,
      }),
      /email/,
    );
    assertOneLineError(
      await runMain(
        [
          "token",
          "mint",
          "--email",
          "a@b.org",
          "--label",
          "x",
          "--quota-mb",
          "0",
          "--data-dir",
          dataDir,
        ],
        { dataDir },
      ),
      /quotaMb must be a whole number from 1 to 1024/,
    );
    const unknown = await runMain(["token", "destroy", "--data-dir", dataDir], { dataDir });
    assertEquals(unknown.code, 2);
    assertMatch(unknown.stderr, /^error: Usage: main\.ts token mint/);
    const missing = await runMain(["token", "revoke", "no-such-jti", "--data-dir", dataDir], {
      dataDir,
    });
    assertOneLineError(missing, /No token has jti no-such-jti/);
  });
});

Deno.test("files at rest: the data dir is 0700 and the database files 0600", async () => {
  await withTempDir("storage-modes-", async (parent) => {
    const fresh = `${parent}/fresh`;
    {
      await using server = await startTestServer({ dataDir: fresh });
      assertEquals((await server.upload("modescheck001", "x")).status, 200);
      assertEquals(modeOf(fresh), "700");
      for (const name of ["storage.db", "storage.db-wal", "storage.db-shm", "hmac.key"]) {
        assertEquals(modeOf(`${fresh}/${name}`), "600", name);
      }
    }
    // A directory left readable by an older version is tightened at the next start.
    Deno.chmodSync(fresh, 0o755);
    Deno.chmodSync(`${fresh}/storage.db`, 0o644);
    await using again = await startTestServer({ dataDir: fresh });
    assertEquals(modeOf(fresh), "700");
    assertEquals(modeOf(`${fresh}/storage.db`), "600");
    assertEquals((await again.get("/p/modescheck001")).status, 200);
  });
});

Deno.test("start-up: a port in use is one line and exit 2", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-port-" });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const run = await runMain(
      ["--hostname", "127.0.0.1", "--port", String(taken.addr.port), "--data-dir", dataDir],
      { dataDir },
    );
    assertOneLineError(run, /already in use/);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("start-up: rotate-key on a directory the permissions do not cover names the flags", async () => {
  await withTempDir("storage-rotate-", async (elsewhere) => {
    const run = await runMain(["rotate-key", "--data-dir", elsewhere], {
      flags: await startTaskFlags("./data"),
    });
    assertOneLineError(run, /--allow-read=DIR --allow-write=DIR/);
  });
});

Deno.test("start-up: a port in use releases the data directory for the next start", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-port-lock-" });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    let refused = false;
    try {
      await startTestServer({ dataDir, args: ["--port", String(taken.addr.port)] });
    } catch (error) {
      refused = error instanceof Deno.errors.AddrInUse;
    }
    assertEquals(refused, true);
    // The failed start left no lock (nor timers, workers or an open database) behind.
    await using server = await startTestServer({ dataDir });
    assertEquals((await server.get("/healthz")).status, 200);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("token list and revoke on a data dir that does not exist create nothing", async () => {
  await withTempDir("storage-token-typo-", async (parent) => {
    const missing = `${parent}/no-such-dir`;
    for (const args of [["token", "list"], ["token", "revoke", "x"]]) {
      const run = await runMain([...args, "--data-dir", missing], { dataDir: missing });
      assertOneLineError(run, /No database at/);
    }
    assertEquals([...Deno.readDirSync(parent)], []);
  });
});

Deno.test("start-up: a database migrated by a newer build is one line and exit 2, untouched", async () => {
  await withTempDir("storage-newer-db-", async (dataDir) => {
    // A first start creates the database; then a "newer build" moves its schema on.
    {
      await using _server = await startTestServer({ dataDir });
    }
    const db = new DatabaseSync(`${dataDir}/storage.db`);
    db.exec("PRAGMA user_version = 99");
    db.close();
    const run = await runMain(["--port", "0", "--data-dir", dataDir], { dataDir });
    assertOneLineError(run, /schema is version 99, newer than the \d+ this program knows/);
    const after = new DatabaseSync(`${dataDir}/storage.db`);
    const { user_version } = after.prepare("PRAGMA user_version").get() as { user_version: number };
    after.close();
    assertEquals(Number(user_version), 99);
  });
});

Deno.test("start-up: rotate-key on a data directory that does not exist is one line, exit 2", async () => {
  const parent = await Deno.makeTempDir({ prefix: "storage-rotate-" });
  const dataDir = `${parent}/missing`;
  try {
    const run = await runMain(["rotate-key", "--data-dir", dataDir], {
      flags: ["--allow-env=STORAGE_*", `--allow-read=${parent}`, `--allow-write=${parent}`],
    });
    assertOneLineError(run, /its directory does not exist/);
    assertEquals(await Array.fromAsync(Deno.readDir(parent)), []);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
