/**
 * The README's start command on a fresh machine prints no "Ignored build scripts" box.
 *
 * Deno's global npm cache installs every package in deno.lock on the first run that needs npm at
 * all, whatever that run's module graph reaches: the server's first start also fetches the tests'
 * packages, among them two with install scripts (protobufjs under ipfs-car, iso-constants under
 * @helia/verified-fetch). With no node_modules directory Deno cannot run those scripts and said
 * so in a yellow box, once per package per project directory (its marker is keyed by the path, so
 * a copy of the repository elsewhere showed it again). deno.json's `allowScripts` denies the two
 * scripts, a decision docs/operations.md ("Running it") explains; this test holds it.
 *
 * It needs the npm registry: it runs `deno task start --help` with an empty DENO_DIR, which
 * downloads every package in deno.lock into a temporary directory (about 10 s and 600 MB here),
 * then removes it.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("fresh DENO_DIR (downloads from npm): `task start` prints no build-scripts box", async () => {
  const denoDir = await Deno.makeTempDir({ prefix: "fresh-deno-dir-" });
  try {
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["task", "start", "--help"],
      cwd: ROOT,
      env: { DENO_DIR: denoDir, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assertEquals(run.code, 0, stderr);
    assertMatch(new TextDecoder().decode(run.stdout), /^Usage: main\.ts /m);
    // The packages did come from npm into the empty directory: the check below is not vacuous.
    const fetched = [...Deno.readDirSync(`${denoDir}/npm/registry.npmjs.org`)].length;
    assertEquals(fetched > 0, true, "packages were installed from npm");
    assertEquals(stderr.includes("Ignored build scripts"), false, stderr);
  } finally {
    await Deno.remove(denoDir, { recursive: true });
  }
});
