/**
 * Ctrl-C during `storage upload`: the CLI as a separate process (the `cli`
 * task's flags), the real server in-process. The server's store lets a
 * resumable upload's first MiB in and then holds the body, so the CLI is
 * mid-piece, its reservation visible in GET /api/usage, when it gets SIGINT.
 * A client that leaves ends what it cannot continue: the quota comes back at
 * once (not after the server's 24 hours), and a re-run stores the file.
 */
import { assertEquals } from "../helpers/assert.ts";
import { holdingStore } from "../helpers/held_appends.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { assertFailure, cliOk, dirPrefix, KIB, randomBytes, spawnCli } from "../helpers/cli.ts";

const MIB = 1024 * KIB;

async function remainingToday(server: TestServer, token: string): Promise<number> {
  const response = await server.get("/api/usage", {
    headers: { authorization: `Bearer ${token}` },
  });
  assertEquals(response.status, 200);
  return (await response.json()).remainingTodayBytes;
}

Deno.test("cli: Ctrl-C mid-upload ends the unfinished upload, so its quota comes back at once", async (t) => {
  const { hold, wrapStore } = holdingStore(MIB);
  await using server = await startTestServer({ wrapStore });
  const state = hold.state!;
  const { token } = await signup(server);
  const quota = await remainingToday(server, token);
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    const env = { STORAGE_URL: server.url, STORAGE_TOKEN: token };
    await Deno.writeFile(`${dir}/big.bin`, randomBytes(12 * MIB));
    const child = spawnCli(["upload", "big.bin", "--json"], { cwd: dir, env }).spawn();
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
    assertFailure(
      {
        code: output.code,
        stdout: decoder.decode(output.stdout),
        stderr: decoder.decode(output.stderr),
        stdoutBytes: output.stdout,
      },
      130,
      /^error: interrupted$/,
    );
    assertEquals(await remainingToday(server, token), quota, "the reservation went with the CLI");

    // The re-run (nothing held now) stores the file and charges it once.
    state.release.resolve();
    const rerun = JSON.parse(
      (await cliOk(["upload", "big.bin", "--json"], { cwd: dir, env })).stdout,
    );
    assertEquals(rerun.pieces.map((p: { via: string }) => p.via), ["sent"]);
    assertEquals(await remainingToday(server, token), quota - 12 * MIB);
  } finally {
    state.release.resolve();
    await Deno.remove(dir, { recursive: true });
  }
});
