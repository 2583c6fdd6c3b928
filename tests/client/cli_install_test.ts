/**
 * `deno task install-cli` puts `storage` on the PATH, and it runs from any
 * directory, not only inside the clone. The install goes into a temporary
 * DENO_INSTALL_ROOT (never the user's), and the installed command is run
 * from a temporary directory outside the repository, against the real
 * server, with the same permission flags as the `cli` task.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { FLAGS, randomBytes, ROOT } from "../helpers/cli.ts";

const tasks: Record<string, string> = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;

/** The permission flags of a task's command line, in order. */
function permissionsOf(command: string): string[] {
  return command.split(/\s+/).filter((word) => word.startsWith("--allow-")).sort();
}

Deno.test("cli install: the installed command has the cli task's permissions", () => {
  assertEquals(permissionsOf(tasks["install-cli"]), permissionsOf(FLAGS.join(" ")));
});

Deno.test("cli install: `storage` runs from a directory outside the repository", async () => {
  await using server = await startTestServer();
  const root = await Deno.makeTempDir({ prefix: "cli-install-root-" });
  const elsewhere = await Deno.makeTempDir({ prefix: "cli-install-cwd-" });
  try {
    assertEquals(elsewhere.startsWith(ROOT), false, "the working directory is outside the clone");
    const env = { DENO_INSTALL_ROOT: root, NO_COLOR: "1" };
    const install = await new Deno.Command(Deno.execPath(), {
      args: ["task", "-q", "install-cli"],
      cwd: ROOT,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(install.stderr) +
      new TextDecoder().decode(install.stdout);
    assertEquals(install.code, 0, said);
    const storage = async (args: string[]) => {
      const run = await new Deno.Command(`${root}/bin/storage`, {
        args,
        cwd: elsewhere,
        env: {
          PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:${Deno.env.get("PATH") ?? ""}`,
          STORAGE_URL: server.url,
          STORAGE_TOKEN: "",
          NO_COLOR: "1",
        },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const decoder = new TextDecoder();
      return {
        code: run.code,
        stdout: decoder.decode(run.stdout),
        stderr: decoder.decode(run.stderr),
      };
    };
    const help = await storage(["--help"]);
    assertEquals(help.code, 0, help.stderr);
    assertMatch(help.stdout, /^Usage: storage /);
    await Deno.writeFile(`${elsewhere}/here.bin`, randomBytes(5000));
    const upload = await storage(["upload", "here.bin", "--json"]);
    assertEquals(upload.code, 0, upload.stderr);
    const { cid, size } = JSON.parse(upload.stdout);
    assertEquals(size, 5000);
    const download = await storage(["download", cid, "-o", "back.bin"]);
    assertEquals(download.code, 0, download.stderr);
    assertEquals(
      await Deno.readFile(`${elsewhere}/back.bin`),
      await Deno.readFile(`${elsewhere}/here.bin`),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(elsewhere, { recursive: true });
  }
});
