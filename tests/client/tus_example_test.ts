/**
 * docs/api.md's tus-js-client script runs as written, from a directory
 * outside the clone (the clone's path and the server's address put where the
 * doc says), with the command the doc gives (this Deno for the pinned npx
 * one): it uploads a file; killed mid-upload and run again, it continues the
 * same upload from the server's offset (its URL kept in a file) and the file
 * is stored whole.
 */
import { blockAfter, commandOf } from "../helpers/doc_blocks.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { holdingStore } from "../helpers/held_appends.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import { withTempDir } from "../helpers/files.ts";
import { eventually } from "../helpers/wait.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
const PINNED = "npx -y deno@2.9.6 ";
const MIB = 1024 * 1024;

Deno.test("docs: the tus-js-client script uploads, and after a kill a second run continues it", async () => {
  const doc = await Deno.readTextFile(`${ROOT}/docs/api.md`);
  const marker = "**With tus-js-client.**";
  const script = blockAfter(doc, marker, "ts");
  const command = commandOf(blockAfter(doc, marker, "sh"));
  assertOk(command.startsWith(PINNED), command);
  const words = command.slice(PINNED.length).split(/\s+/);
  assertEquals(words.at(-1), "./video.mp4");

  // Each PATCH gets 1 MiB in, then is held until its client leaves (or the hold is released).
  const { hold, wrapStore } = holdingStore(MIB);
  await using server = await startTestServer({ wrapStore });
  const { token } = await signup(server);
  const file = seededBytes(20 * MIB + 4321, 37);
  await withTempDir("tus-example-", async (dir) => {
    await Deno.writeFile(`${dir}/video.mp4`, file);
    await Deno.writeTextFile(
      `${dir}/tus_upload.ts`,
      script.replaceAll("/path/to/storage-service", ROOT)
        .replace("http://127.0.0.1:8080", server.url),
    );
    const run = () =>
      new Deno.Command(Deno.execPath(), {
        args: words,
        cwd: dir,
        env: { NO_COLOR: "1", STORAGE_TOKEN: token },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();

    const first = run();
    const ended = first.output();
    const firstRun = { exited: null as Deno.CommandOutput | null };
    ended.then((output) => firstRun.exited = output);
    try {
      const what = "the first run mid-upload";
      await eventually(() => hold.state!.held || firstRun.exited !== null, what, {
        timeoutMs: 60_000,
      });
      assertEquals(
        firstRun.exited?.code ?? null,
        null,
        `the first run ended early: ${new TextDecoder().decode(firstRun.exited?.stderr)}`,
      );
    } finally {
      if (firstRun.exited === null) first.kill("SIGKILL"); // ours, by its handle: a crash, no goodbye
      await ended;
    }
    const kept = JSON.parse(await Deno.readTextFile(`${dir}/.tus-uploads.json`));
    assertEquals(Object.keys(kept).length, 1, "the URL outlived the process");

    hold.state!.release.resolve();
    const second = await run().output();
    const stdout = new TextDecoder().decode(second.stdout);
    assertEquals(second.code, 0, new TextDecoder().decode(second.stderr));
    const url = (Object.values(kept)[0] as { uploadUrl: string }).uploadUrl;
    assertMatch(stdout, new RegExp(`^continuing ${url}$`, "m"));
    const cid = pieceCidOf(file);
    assertMatch(stdout, new RegExp(`^stored: ${server.url}/p/${cid}$`, "m"));
    assertEquals(new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer()), file);
  });
});
