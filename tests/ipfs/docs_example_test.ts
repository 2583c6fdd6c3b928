/**
 * docs/api.md's verified-fetch script runs as written: saved in a temporary
 * directory outside the clone, its gateway pointed at a test server on
 * 127.0.0.1 (the one line a reader changes), run with the command the doc
 * gives (this Deno in place of the pinned npx one), it writes the file of an
 * ipfs-car CAR stored here to stdout and exits by itself.
 */
import { blockAfter, commandOf } from "../helpers/doc_blocks.ts";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { packFiles } from "../helpers/ipfs.ts";
import { startTestServer } from "../helpers/server.ts";
import { withTempDir } from "../helpers/files.ts";
import { within } from "../helpers/wait.ts";
import { uploadCar } from "./ipfs_suite.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const PINNED = "npx -y deno@2.9.6 ";

Deno.test("docs: the verified-fetch script in api.md fetches a file of a stored CAR and exits", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/api.md`);
  const marker = "**With verified-fetch.**";
  const script = blockAfter(doc, marker, "ts");
  const command = commandOf(blockAfter(doc, marker, "sh"));
  assertOk(script.includes('const gateway = "https://storage.example.org";'), script);
  assertOk(command.startsWith(PINNED), command);

  await using server = await startTestServer();
  const file = seededBytes(2 * 1024 * 1024 + 777, 36); // three 1 MiB leaves
  const { root, car } = await packFiles({ "dir/file.bin": file });
  assertEquals((await uploadCar(server, car)).response.status, 200);
  await withTempDir("verified-fetch-example-", async (dir) => {
    assertOk(!dir.startsWith(ROOT));
    await Deno.writeTextFile(
      `${dir}/verified_fetch.ts`,
      script.replace("https://storage.example.org", server.url),
    );
    // The doc's command: its flags and script, a real root, stdout taken instead of "> file.bin".
    const words = command.slice(PINNED.length).replace(/\s*>.*$/, "").split(/\s+/);
    assertEquals(words.slice(-2), ["bafybeib…", "dir/file.bin"]);
    const child = new Deno.Command(Deno.execPath(), {
      args: [...words.slice(0, -2), root, "dir/file.bin"],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const run = child.output();
    const output = await within(run, 120_000, "the script ends by itself").catch(async (error) => {
      child.kill("SIGKILL"); // ours, by its handle: a script that never ends fails, not hangs
      await run;
      throw error;
    });
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    assertEquals(output.stdout.length, file.length, stderr);
    assertEquals(output.stdout, file);
  });
});
