/**
 * docs/client.md's SDK example works as written, from outside the clone: the
 * script is saved in a temporary directory (the clone's path put where the
 * example says to), a file to upload beside it, and it runs with exactly the
 * permission flags the doc gives (the server's address pointed at a test
 * server), through this Deno in place of the pinned npx one.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import { runDeno } from "../helpers/main_process.ts";
import { withTempDir } from "../helpers/files.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** The first fenced block of `language` after the heading. */
function blockAfter(markdown: string, heading: string, language: string): string {
  const section = markdown.slice(markdown.indexOf(`\n${heading}\n`));
  const match = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(section);
  if (!match) throw new Error(`no ${language} block after ${heading}`);
  return match[1];
}

Deno.test("docs: the SDK example runs from any directory with the permission flags it names", async () => {
  const doc = await Deno.readTextFile(`${ROOT}/docs/client.md`);
  const script = blockAfter(doc, "## The SDK", "ts");
  const command = blockAfter(doc, "## The SDK", "sh").replace(/\\\n\s*/g, "").trim();
  assertOk(script.includes("/path/to/storage-service/src/client/sdk/mod.ts"));
  assertOk(command.startsWith("npx -y deno@2.9.6 run "), command);

  await using server = await startTestServer();
  const { token } = await signup(server);
  const address = new URL(server.url).host;
  await withTempDir("storage-sdk-example-", async (dir) => {
    const bytes = seededBytes(300_000, 51);
    await Deno.writeFile(`${dir}/video.mp4`, bytes);
    await Deno.writeTextFile(
      `${dir}/upload.ts`,
      script.replaceAll("/path/to/storage-service", ROOT)
        .replace("http://127.0.0.1:8080", server.url),
    );
    const args = command.slice("npx -y deno@2.9.6 ".length)
      .replaceAll("127.0.0.1:8080", address).split(/\s+/);
    const output = await runDeno(["run", "--no-prompt", ...args.slice(1)], {
      cwd: dir,
      clearEnv: true,
      env: { STORAGE_TOKEN: token },
    });
    assertEquals(output.code, 0, output.stderr);
    assertEquals(output.stderr, "", "no error, nothing asked");
    assertEquals(await Deno.readFile(`${dir}/copy.mp4`), bytes);
    assertOk(output.stdout.includes(`${server.url}/p/bafkzcib`), output.stdout);
  });
});
