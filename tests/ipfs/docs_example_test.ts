/**
 * docs/api.md's CAR upload commands run as written after the ipfs-car line
 * (the CAR is packed by ipfs-car's library here): the PieceCID is asked of
 * the server, and the CAR is uploaded under it.
 *
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
import { signup, startTestServer } from "../helpers/server.ts";
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

Deno.test("docs: the CAR upload example in api.md gets the PieceCID and uploads under it", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/api.md`);
  const lines = commandOf(blockAfter(doc, "**CAR uploads.**", "sh")).split("\n");
  assertOk(lines[0].startsWith("npx ipfs-car pack site/ --output site.car"), lines[0]);
  await using server = await startTestServer();
  const { token } = await signup(server);
  const { root, car } = await packFiles({ "index.html": new TextEncoder().encode("<p>hi</p>\n") });
  await withTempDir("car-upload-example-", async (dir) => {
    await Deno.writeFile(`${dir}/site.car`, car);
    const script = [...lines.slice(1), "echo", 'echo "$PIECE_CID"'].join("\n")
      .replaceAll("http://127.0.0.1:8080", server.url);
    const output = await new Deno.Command("bash", {
      args: ["-euo", "pipefail", "-c", script],
      cwd: dir,
      env: { TOKEN: token },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
    const [answer, pieceCid] = stdout.trim().split("\n");
    assertEquals(JSON.parse(answer).roots, [root]);
    assertEquals(JSON.parse(answer).cid, pieceCid);
  });
});
