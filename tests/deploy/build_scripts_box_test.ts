/**
 * The README's start command prints no "Ignored build scripts" box, on a fresh machine or from a
 * copy of the repository anywhere.
 *
 * Deno's global npm cache installs every package in deno.lock on the first run that needs npm at
 * all, whatever that run's module graph reaches: the server's first start also fetches the tests'
 * packages, among them two with install scripts (protobufjs under ipfs-car, iso-constants under
 * @helia/verified-fetch). With no node_modules directory Deno cannot run those scripts and said
 * so in a yellow box, once per package per project directory: its marker is keyed by the
 * project's path, so a clone at a new path showed it again, with every package already cached.
 * deno.json's `allowScripts` denies the two scripts, a decision docs/operations.md ("Running it")
 * explains; this test holds it.
 *
 * Why a copy and not an empty DENO_DIR: a new path is the same first run for that warning, and it
 * needs no download (an empty DENO_DIR fetched 600 MB from npm, 11 to 215 s here); a package the
 * shared cache lacks is still fetched, so the run is real either way.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** What `deno task start` reads: the config, the lock, the entry point and the sources. */
const START_NEEDS = ["deno.json", "deno.lock", "main.ts", "src"];

async function copyTree(from: string, to: string): Promise<void> {
  const info = await Deno.stat(from);
  if (!info.isDirectory) return await Deno.copyFile(from, to);
  await Deno.mkdir(to);
  for await (const entry of Deno.readDir(from)) {
    await copyTree(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
}

Deno.test("a copy of the repository at a new path: `task start` prints no build-scripts box", async () => {
  const copy = await Deno.makeTempDir({ prefix: "fresh-clone-" });
  try {
    for (const name of START_NEEDS) await copyTree(`${ROOT}${name}`, `${copy}/${name}`);
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["task", "start", "--help"],
      cwd: copy,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assertEquals(run.code, 0, stderr);
    assertMatch(new TextDecoder().decode(run.stdout), /^Usage: main\.ts /m);
    assertEquals(stderr.includes("Ignored build scripts"), false, stderr);
  } finally {
    await Deno.remove(copy, { recursive: true });
  }
});
