/**
 * A user's files from the client side: `storage files` shows a split file as
 * one file (its name, its real size, its parts under it) and each deal's
 * state; `storage delete DEAL_ID --yes` ends a deal (and asks for --yes);
 * the SDK's deleteFile ends a split file's deals, its parts' included. The
 * CLI runs as a separate process with the `cli` task's flags against the
 * real server, whose per-file cap is lowered so that small files split.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import { assertFailure, cli, cliOk, dirPrefix, KIB, randomBytes } from "../helpers/cli.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import type { Deal } from "../../src/client/sdk/mod.ts";

async function splitServer() {
  const server = await startTestServer({ args: ["--token-max-file-size", "64KiB"] });
  const { token } = await signup(server);
  return { server, token, env: { STORAGE_URL: server.url, STORAGE_TOKEN: token } };
}

Deno.test("cli files: a split file is one row with its real size and its parts under it", async (t) => {
  const { server, env } = await splitServer();
  await using _ = server;
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    await Deno.writeFile(`${dir}/big.bin`, randomBytes(150 * KIB));
    await Deno.writeFile(`${dir}/small.txt`, randomBytes(3000));
    const split = JSON.parse(
      (await cliOk(["upload", "big.bin", "--json"], { cwd: dir, env })).stdout,
    );
    assertEquals(split.pieces.length, 3);
    await cliOk(["upload", "small.txt"], { cwd: dir, env });
    const lines = (await cliOk(["files"], { env })).stdout.trimEnd().split("\n");
    assertMatch(lines[0], /^CID\s+SIZE\s+CREATED\s+TERM ENDS\s+STATE\s+DEAL\s+NAME$/);
    assertEquals(lines.length, 1 + 1 + 1 + 3, `a header, two files, three parts:\n${lines}`);
    assertMatch(lines[1], /small\.txt$/);
    assertMatch(lines[1], / active /);
    assertMatch(
      lines[2],
      new RegExp(`^${split.cid}\\s+150\\.0 KiB .* active .*big\\.bin \\(split file, 3 parts\\)$`),
    );
    for (const [index, piece] of split.pieces.entries()) {
      assertMatch(
        lines[3 + index],
        new RegExp(`^  ${piece.cid}\\s+.*big\\.bin\\.part${index + 1}$`),
      );
    }
    // --json is the server's page as it is: every deal, the manifest's and each part's.
    assertEquals(JSON.parse((await cliOk(["files", "--json"], { env })).stdout).files.length, 5);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli delete: asks for --yes, then ends the deal, which files shows as deleted", async (t) => {
  const { server, env } = await splitServer();
  await using _ = server;
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    await Deno.writeFile(`${dir}/a.txt`, randomBytes(2000));
    const [dealId] =
      JSON.parse((await cliOk(["upload", "a.txt", "--json"], { cwd: dir, env })).stdout)
        .deals;
    const unconfirmed = await cli(["delete", dealId], { env });
    assertFailure(unconfirmed, 2, /^error: deleting stage-\w+ cannot be undone: run .* --yes/);
    const [before] = JSON.parse((await cliOk(["files", "--json"], { env })).stdout).files;
    assertEquals(before.state, "active", "nothing was sent without --yes");

    assertMatch(
      (await cliOk(["delete", dealId, "--yes"], { env })).stdout,
      /: deleted at \S+ \(a\.txt\)/,
    );
    const again = JSON.parse((await cliOk(["delete", dealId, "--yes", "--json"], { env })).stdout);
    assertEquals([again.dealId, again.state], [dealId, "deleted"]);
    assertMatch((await cliOk(["files"], { env })).stdout, / deleted /);
    assertFailure(
      await cli(["delete", "stage-nosuchdeal", "--yes"], { env }),
      1,
      /^error: not_found: /,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sdk: deleteFile of a split file ends its manifest's deal and its parts' deals", async () => {
  const { server, token } = await splitServer();
  await using _ = server;
  using client = new StorageClient({ server: server.url, token });
  await client.upload(randomBytes(3000), { filename: "keep.bin" });
  const split = await client.upload(randomBytes(150 * KIB), { filename: "video.mp4" });
  const [file, kept] = await client.splitFiles().add((await client.files()).files);
  assertEquals([file.name, file.size, file.parts.length], ["video.mp4", 150 * KIB, 3]);
  assertEquals(file.deal.cid, split.cid);
  assertEquals(kept.name, "keep.bin");

  const deleted = await client.deleteFile(file);
  assertEquals(deleted.map((d) => d.dealId).sort(), [...split.deals].sort());
  const states = new Map<string, Deal["state"]>();
  for await (const deal of client.allFiles()) states.set(deal.filename ?? "", deal.state);
  assertEquals(Object.fromEntries(states), {
    "keep.bin": "active",
    "video.mp4.manifest.json": "deleted",
    "video.mp4.part1": "deleted",
    "video.mp4.part2": "deleted",
    "video.mp4.part3": "deleted",
  });
});

Deno.test("sdk: a piece removed by a sweep is uploaded again (stored: false), not refused as gone", async () => {
  const { server, token } = await splitServer();
  await using _ = server;
  using client = new StorageClient({ server: server.url, token });
  const bytes = randomBytes(3000);
  const first = await client.upload(bytes, { filename: "again.bin" });
  await client.deleteDeal(first.deals[0]);
  const report = await server.server.gc.sweep({ asOf: Date.now() + 30 * 86_400_000 });
  assertEquals(report?.removedPieces, 1);
  assertEquals((await server.get(`/p/${first.cid}`)).status, 410);
  assertEquals(await client.isStored(first.cid), false);

  const again = await client.upload(bytes, { filename: "again.bin" });
  assertEquals([again.cid, again.pieces[0].via], [first.cid, "sent"]);
  assertEquals(new Uint8Array(await (await server.get(`/p/${first.cid}`)).arrayBuffer()), bytes);
});
