/**
 * scripts/compile.ts (deno task compile-server). `deno compile` itself cannot run here (it
 * downloads Deno's runtime), so this checks the exact command it builds, and runs `deno run`
 * with the same permission flags and the same baked env file: what the binary would run.
 */
import {
  compileArgs,
  DEFAULT_DATA_DIR,
  envFileText,
  MALLOC_ENV,
  parseCompileArgs,
  runtimeFlags,
  UsageError,
  V8_FLAGS,
} from "../../scripts/compile.ts";
import { startTaskEnv } from "../../scripts/lib/spawn_server.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { within } from "../helpers/wait.ts";
import { withTempDir } from "../helpers/files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** fetch, but a request gives up after 15 s: a hung proxy or server fails the test, not stalls it. */
function fetch(input: string, init: RequestInit = {}): Promise<Response> {
  return globalThis.fetch(input, { signal: AbortSignal.timeout(15_000), ...init });
}

Deno.test("compile-server: the deno compile command, defaults and every option", () => {
  assertEquals(compileArgs(parseCompileArgs([]), "/tmp/x/data-dir.env"), [
    "compile",
    "--v8-flags=--initial-old-space-size=64,--expose-gc",
    "--allow-net",
    "--allow-sys=statfs",
    "--allow-env=STORAGE_*,PG*",
    "--allow-read=/var/lib/storage-service",
    "--allow-write=/var/lib/storage-service",
    "--env-file=/tmp/x/data-dir.env",
    "--output",
    "dist/storage-service",
    "main.ts",
  ]);
  assertEquals(envFileText(DEFAULT_DATA_DIR), "STORAGE_DATA_DIR=/var/lib/storage-service\n");
  const options = parseCompileArgs([
    "--data-dir",
    "/srv/stage/",
    "--also-read",
    "/etc/letsencrypt",
    "--also-write",
    "/var/backups/storage-service",
    "--target",
    "aarch64-unknown-linux-gnu",
    "--output",
    "dist/stage",
    "--dry-run",
  ]);
  assertEquals(options.dryRun, true);
  assertEquals(compileArgs(options, "/e.env"), [
    "compile",
    "--v8-flags=--initial-old-space-size=64,--expose-gc",
    "--allow-net",
    "--allow-sys=statfs",
    "--allow-env=STORAGE_*,PG*",
    "--allow-read=/srv/stage,/var/backups/storage-service,/etc/letsencrypt",
    "--allow-write=/srv/stage,/var/backups/storage-service",
    "--env-file=/e.env",
    "--target",
    "aarch64-unknown-linux-gnu",
    "--output",
    "dist/stage",
    "main.ts",
  ]);
});

Deno.test("the start and compile tasks run V8 with the server's heap floor, as the binary does; the start task sets glibc's malloc thresholds", async () => {
  // scripts/compile.ts V8_FLAGS says why: without it, the service's reads start a full
  // collection every ~100 MiB sent.
  const { tasks } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assertOk(runtimeFlags(DEFAULT_DATA_DIR).includes(V8_FLAGS), "runtimeFlags has it");
  for (const task of ["start", "compile"]) {
    assertOk(tasks[task].split(/\s+/).includes(V8_FLAGS), `deno task ${task} has ${V8_FLAGS}`);
  }
  // And glibc's malloc settings (MALLOC_ENV says why), which the bench's servers take from it.
  assertEquals(await startTaskEnv(ROOT), MALLOC_ENV);
});

Deno.test("compile-server: refuses directories that would not mean one absolute path", () => {
  for (
    const bad of ["data", "./data", "/", "/srv/a,b", "/srv/../etc", "/srv/my dir", "/srv/$HOME", ""]
  ) {
    let error: unknown = null;
    try {
      parseCompileArgs(["--data-dir", bad]);
    } catch (e) {
      error = e;
    }
    assertOk(error instanceof UsageError, `--data-dir ${JSON.stringify(bad)} refused`);
  }
  for (const args of [["--data-dir"], ["--output", "--dry-run"], ["--frobnicate", "1"], ["x"]]) {
    let error: unknown = null;
    try {
      parseCompileArgs(args);
    } catch (e) {
      error = e;
    }
    assertOk(error instanceof UsageError, `${args.join(" ")} refused`);
  }
});

Deno.test("compile-server: its flags and baked env serve from the chosen directory, unasked", async () => {
  await withTempDir("compile-test-", async (dir) => {
    const dataDir = `${dir}/var/lib/storage-service`;
    const backups = `${dir}/var/backups/storage-service`;
    await Deno.mkdir(backups, { recursive: true });
    const envFile = `${dir}/data-dir.env`;
    await Deno.writeTextFile(envFile, envFileText(dataDir));
    // Exactly the binary's run: its permissions, the env file, main.ts, and no --data-dir. The
    // environment has no STORAGE_* of ours; the working directory is the repository, where
    // ./data is not allowed, so only the baked directory can work.
    const deno = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...runtimeFlags(dataDir, { alsoWrite: [backups] }),
          `--env-file=${envFile}`,
          "main.ts",
          ...args,
        ],
        cwd: ROOT,
        clearEnv: true,
        env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? dir },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      });

    const server = deno(["--port", "0", "--log-format", "json"]).spawn();
    const stderr = new Response(server.stderr).text();
    const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
    try {
      const { value } = await within(lines.read(), 30_000, "the Listening line");
      const url = /Listening on (http:\/\/\S+?)\/?$/m.exec(value ?? "")?.[1];
      assertOk(url, `a Listening line: ${value}`);
      const health = await (await fetch(`${url}/healthz`)).json();
      assertEquals(health.status, "ok", JSON.stringify(health));
      assertEquals(health.database.persistent, true);
      const upload = await fetch(`${url}/api/upload?cid=compiletest0001`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "baked\n",
      });
      assertEquals(upload.status, 200, await upload.clone().text());
      await upload.body?.cancel();

      // The backup before an upgrade (docs/operations.md), beside the running server.
      const backup = await deno(["backup", `${backups}/before-upgrade`]).output();
      assertEquals(backup.code, 0, new TextDecoder().decode(backup.stderr));
      assertOk((await Deno.stat(`${backups}/before-upgrade/storage.db`)).isFile);
    } finally {
      server.kill("SIGTERM");
      await lines.cancel();
    }
    assertEquals((await within(server.status, 15_000, "the server stopping")).code, 0);
    assertMatch(await stderr, /"msg":"stopped"/);
    assertOk((await Deno.stat(`${dataDir}/storage.db`)).isFile, "the database in the baked dir");
    assertEquals((await Deno.stat(dataDir)).mode! & 0o777, 0o700);

    // The operator's commands find the same directory without --data-dir.
    const rotated = await deno(["rotate-key"]).output();
    assertEquals(rotated.code, 0, new TextDecoder().decode(rotated.stderr));
    assertMatch(new TextDecoder().decode(rotated.stdout), new RegExp(`${dataDir}/hmac.key`));
  });
});
