/**
 * The operator's commands in the docs run as written. The README promises
 * that nothing but Node.js and npm is installed, so every command runs Deno
 * through the pinned `npx -y deno@2.9.6`; and every `run … main.ts` command
 * on a data directory spells out the permission flags it needs, which this
 * test proves by running them: the documented line with its paths pointed at
 * temporary directories and `npx -y deno@2.9.6` replaced by this Deno (the
 * same version).
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { runDeno } from "../helpers/main_process.ts";
import { withTempDir } from "../helpers/files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const PINNED = "npx -y deno@2.9.6";
const OPERATOR_DOCS = ["README.md", "docs/operations.md", "docs/scale-out.md", "docs/client.md"];

/** The command lines of a document's sh blocks, continuations joined, comments dropped. */
async function shellCommands(doc: string): Promise<string[]> {
  const text = await Deno.readTextFile(`${ROOT}${doc}`);
  const commands: string[] = [];
  for (const [, block] of text.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm)) {
    for (const line of block.replace(/\\\n\s*/g, "").split("\n")) {
      const command = line.replace(/\s+#.*$/, "").trim();
      if (command !== "") commands.push(command);
    }
  }
  return commands;
}

Deno.test("docs: every documented command runs Deno through the pinned npx, never a bare deno", async () => {
  const bare: string[] = [];
  let seen = 0;
  for (const doc of OPERATOR_DOCS) {
    for (const command of await shellCommands(doc)) {
      // After any VAR=value prefixes: the program the line runs.
      const program = command.replace(/^(?:[A-Z_]+=\S+\s+)*/, "");
      if (/^deno\s/.test(program)) bare.push(`${doc}: ${command}`);
      if (program.startsWith(PINNED)) seen++;
    }
  }
  assertOk(seen > 20, `found ${seen} pinned commands`);
  assertEquals(bare, []);
});

/**
 * The documented operator's commands (`run … main.ts <command>`) on ./data or /srv/stage; not
 * those that serve (no command word), nor those on PostgreSQL or a bucket.
 */
async function dataDirCommands(): Promise<string[]> {
  const commands = await shellCommands("docs/operations.md");
  return commands.filter((c) =>
    c.startsWith(`${PINNED} run `) && / main\.ts [a-z]/.test(c) &&
    /--allow-read=(\.\/data|\/srv\/stage)/.test(c) && !c.includes("postgres:")
  );
}

function argvOf(command: string, paths: Record<string, string>, jti: string): string[] {
  // One pass, longest first: a path put in is never replaced again.
  const froms = Object.keys(paths).sort((a, b) => b.length - a.length);
  const pattern = new RegExp(froms.map((from) => from.replace(/[./]/g, "\\$&")).join("|"), "g");
  const text = command.slice(`${PINNED} `.length).replace(pattern, (from) => paths[from]);
  return text.replace("JTI", jti).split(/\s+/);
}

Deno.test("docs: the data directory commands of operations.md run as written", async () => {
  await withTempDir("storage-docs-", async (dir) => {
    const paths = {
      "./data": `${dir}/data`,
      "/srv/stage": `${dir}/data`,
      "/backup/2026-11-22": `${dir}/backup/copy`,
      "/backup": `${dir}/backup`,
    };
    await Deno.mkdir(`${dir}/backup`);
    // A data directory as a server leaves it (its database, key and pieces/), the server gone.
    await (await startTestServer({ dataDir: `${dir}/data` })).server.shutdown();
    const commands = await dataDirCommands();
    const names = commands.map((c) => c.split(" main.ts ")[1].split(" ").slice(0, 2).join(" "));
    const documented = [
      "token mint",
      "token list",
      "token revoke",
      "scrub",
      "backup",
      "rotate-key",
    ];
    for (const expected of documented) {
      assertOk(names.some((n) => n.startsWith(expected)), `operations.md documents ${expected}`);
    }
    let jti = "";
    for (const command of commands) {
      const result = await runDeno(argvOf(command, paths, jti), { cwd: ROOT });
      assertEquals(result.code, 0, `${command}\n${result.stderr}`);
      if (command.includes("token mint")) jti = JSON.parse(result.stdout).jti;
    }
    assertOk(jti !== "", "token mint printed a jti");
  });
});

Deno.test("docs: the README's one-file test command runs that file alone, and the task's flags", async () => {
  const commands = await shellCommands("README.md");
  const task: string = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks.test;
  const one = commands.find((c) => c.startsWith(`${PINNED} test `) && c.endsWith("_test.ts"));
  assertOk(one !== undefined, "README gives the command that runs one test file");
  const words = one.slice(PINNED.length + 1).split(/\s+/);
  assertEquals(words.slice(0, -1), task.split(/\s+/).slice(1, -1), "the test task's flags");
  // Pointed at a small file of this folder: only its tests run.
  const output = await new Deno.Command(Deno.execPath(), {
    args: [...words.slice(0, -1), "tests/project/ip_test.ts"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  assertEquals(output.code, 0, text + new TextDecoder().decode(output.stderr));
  const files = [...text.matchAll(/^running \d+ tests? from (\S+)$/gm)].map((m) => m[1]);
  assertEquals(files, ["./tests/project/ip_test.ts"]);
});
