/**
 * Ctrl-C during `storage upload`: the CLI as a separate process (the `cli`
 * task's flags), the real server in-process. The server's store lets a
 * resumable upload's first MiB in and then holds the body, so the CLI is
 * mid-piece, its reservation visible in GET /api/usage, when it gets SIGINT.
 * A client that leaves ends what it cannot continue: the quota comes back at
 * once (not after the server's 24 hours), and a re-run stores the file. With
 * --keep it keeps the piece instead, and the next run continues it.
 */
import { assertEquals } from "../helpers/assert.ts";
import { holdingStore } from "../helpers/held_appends.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { assertFailure, cliOk, dirPrefix, KIB, randomBytes, spawnCli } from "../helpers/cli.ts";
import type { CliRun } from "../helpers/cli.ts";

const MIB = 1024 * KIB;

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

async function remainingToday(server: TestServer, token: string): Promise<number> {
  const response = await server.get("/api/usage", {
    headers: { authorization: `Bearer ${token}` },
  });
  assertEquals(response.status, 200);
  return (await response.json()).remainingTodayBytes;
}

/**
 * A server whose appends hold after 1 MiB, a token, and `storage upload big.bin …args` (12 MiB)
 * SIGINTed once its piece is held mid-way, with its 12 MiB reserved. Disposing removes the
 * temporary directory and stops the server.
 */
async function interruptedUpload(t: { name: string }, args: string[]) {
  const { hold, wrapStore } = holdingStore(MIB);
  const server = await startTestServer({ wrapStore });
  const state = hold.state!;
  const { token } = await signup(server);
  const quota = await remainingToday(server, token);
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  const env = { STORAGE_URL: server.url, STORAGE_TOKEN: token };
  const bytes = randomBytes(12 * MIB);
  await Deno.writeFile(`${dir}/big.bin`, bytes);
  const child = spawnCli(["upload", "big.bin", ...args], { cwd: dir, env }).spawn();
  let output: Deno.CommandOutput;
  try {
    await eventually(
      async () => state.held && await remainingToday(server, token) === quota - 12 * MIB,
      "the upload mid-piece, its 12 MiB reserved",
      { timeoutMs: 30_000 },
    );
    child.kill("SIGINT");
  } finally {
    output = await child.output();
  }
  const decoder = new TextDecoder();
  const run: CliRun = {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    stdoutBytes: output.stdout,
  };
  return {
    server,
    state,
    token,
    quota,
    dir,
    env,
    bytes,
    run,
    async [Symbol.asyncDispose]() {
      state.release.resolve();
      await Deno.remove(dir, { recursive: true });
      await server[Symbol.asyncDispose]();
    },
  };
}

Deno.test("cli: Ctrl-C mid-upload ends the unfinished upload, so its quota comes back at once", async (t) => {
  await using u = await interruptedUpload(t, ["--json"]);
  assertFailure(u.run, 130, /^error: interrupted$/);
  assertEquals(
    await remainingToday(u.server, u.token),
    u.quota,
    "the reservation went with the CLI",
  );

  // The re-run (nothing held now) stores the file and charges it once.
  u.state.release.resolve();
  const rerun = JSON.parse(
    (await cliOk(["upload", "big.bin", "--json"], { cwd: u.dir, env: u.env })).stdout,
  );
  assertEquals(rerun.pieces.map((p: { via: string }) => p.via), ["sent"]);
  assertEquals(await remainingToday(u.server, u.token), u.quota - 12 * MIB);
});

Deno.test("cli: with --keep, Ctrl-C keeps the unfinished piece and the next run sends only the rest", async (t) => {
  await using u = await interruptedUpload(t, ["--keep"]);
  const creations = () =>
    u.server.logs.filter((l) =>
      l.msg === "request" && l.method === "POST" && l.route === "/api/tus"
    ).length;
  assertFailure(
    u.run,
    130,
    /^error: interrupted; unfinished pieces of big\.bin are kept on the server .* run the same upload again/,
  );
  assertEquals(await remainingToday(u.server, u.token), u.quota - 12 * MIB, "kept: still reserved");
  const kept = JSON.parse(await Deno.readTextFile(`${u.dir}/big.bin.storage-resume`));
  assertEquals(Object.keys(kept).length, 1);
  assertEquals(creations(), 1);

  // The next run (no --keep needed) continues that upload: no second creation, stored whole.
  u.state.release.resolve();
  const rerun = JSON.parse(
    (await cliOk(["upload", "big.bin", "--json"], { cwd: u.dir, env: u.env })).stdout,
  );
  assertEquals(rerun.pieces.map((p: { via: string }) => p.via), ["sent"]);
  assertEquals(creations(), 1, "the kept upload was continued, not started again");
  // Over both runs, every byte reached the server once: the second sent only the rest.
  const received = u.server.logs
    .filter((l) => l.msg === "request" && l.method === "PATCH")
    .reduce((sum, l) => sum + Number(l.bytesIn ?? 0), 0);
  assertEquals(received, 12 * MIB, "no byte sent twice");
  const stored = await (await u.server.get(`/p/${rerun.cid}`)).arrayBuffer();
  assertEquals(new Uint8Array(stored), u.bytes);
  assertEquals(await remainingToday(u.server, u.token), u.quota - 12 * MIB, "charged once");
  assertEquals(await exists(`${u.dir}/big.bin.storage-resume`), false, "the resume file goes");
});
