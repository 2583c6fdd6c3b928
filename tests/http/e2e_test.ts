/** main.ts as its own process, with the start task's permission flags. */
import { tempFiles } from "../helpers/pieces.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import type { RawResponse } from "../helpers/raw_http.ts";
import { eventually } from "../helpers/wait.ts";
import { withTempDir } from "../helpers/files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** GET /healthz on its own connection (so no pooled connection holds a shutdown up). */
async function health(port: number): Promise<RawResponse> {
  const response = await rawRequest(port, "GET /healthz HTTP/1.1\nHost: x\n");
  if (response === null) throw new Error("no answer from /healthz");
  return response;
}

async function uploadsInFlight(port: number): Promise<number> {
  return JSON.parse((await health(port)).body).uploads.inFlight;
}

Deno.test("e2e: --help lists the flags and exits 0", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-env=STORAGE_*", `${ROOT}main.ts`, "--help"],
    stdout: "piped",
  }).output();
  assertEquals(out.code, 0);
  const text = new TextDecoder().decode(out.stdout);
  for (const flag of ["--hostname", "--port", "--data-dir", "--base-url", "--trusted-proxies"]) {
    assertMatch(text, new RegExp(flag));
  }
});

Deno.test("e2e: without any permission, --help still prints, and serving says which flag is missing", async () => {
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", `${ROOT}main.ts`, ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  const help = await run(["--help"]);
  assertEquals(help.code, 0, new TextDecoder().decode(help.stderr));
  const text = new TextDecoder().decode(help.stdout);
  for (const command of ["rotate-key", "token", "backup", "scrub", "migrate", "gc", "handoff"]) {
    assertMatch(text, new RegExp(`main\\.ts ${command} `), `--help names ${command}`);
  }
  const served = await run([]);
  assertEquals(served.code, 2);
  const lines = new TextDecoder().decode(served.stderr).trimEnd().split("\n");
  assertEquals(lines.length, 1, lines.join("\n"));
  assertMatch(lines[0], /^error: Missing permission: .*--allow-env=STORAGE_\*,PG\*/);
});

Deno.test("e2e: a bad flag exits 2 and names it", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-env=STORAGE_*", `${ROOT}main.ts`, "--port", "nope"],
    stderr: "piped",
  }).output();
  assertEquals(out.code, 2);
  assertMatch(new TextDecoder().decode(out.stderr), /--port/);
});

Deno.test("e2e: the server serves, stops on SIGTERM, and keeps its data across a restart", async () => {
  await withTempDir("storage-e2e-", async (dataDir) => {
    {
      await using server = await spawnServer(dataDir);
      const upload = await fetch(`${server.url}/api/upload?cid=bafke2epiece01`, {
        method: "POST",
        headers: { "content-type": "text/plain", "x-filename": "notes.txt" },
        body: "from another process",
      });
      assertEquals(upload.status, 200);
      assertEquals((await upload.json()).retrievalUrl, `${server.url}/p/bafke2epiece01`);
      server.process.kill("SIGTERM");
      assertEquals(await server.exited, 0);
      // One structured line per request on stderr.
      const line = server.stderr().split("\n").map((l) => l.trim()).find((l) =>
        l.includes('"route":"/api/upload"')
      );
      assertOk(line, server.stderr());
      assertEquals(JSON.parse(line).status, 200);
    }
    await using again = await spawnServer(dataDir);
    const served = await fetch(`${again.url}/p/bafke2epiece01`);
    assertEquals(await served.text(), "from another process");
    assertMatch(served.headers.get("content-disposition")!, /notes\.txt/);
  });
});

Deno.test("e2e: SIGTERM lets an upload in flight finish before exiting", async () => {
  await withTempDir("storage-e2e-", async (dataDir) => {
    await using server = await spawnServer(dataDir);
    const port = Number(new URL(server.url).port);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const encoder = new TextEncoder();
    await conn.write(encoder.encode(
      "POST /api/upload?cid=bafkinflight01 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\n" +
        "Content-Length: 10\r\nConnection: close\r\n\r\nhello",
    ));
    await eventually(async () => await uploadsInFlight(port) === 1, "the upload in its handler");
    server.process.kill("SIGTERM");
    // Draining: the server has taken the signal and keeps no connection alive any more.
    await eventually(
      async () => (await health(port)).headers.get("connection") === "close",
      "the server draining after SIGTERM",
    );
    assertEquals(await uploadsInFlight(port), 1, "the upload is still running");
    await conn.write(encoder.encode("world"));
    const response = await new Response(conn.readable).text();
    assertMatch(response, /^HTTP\/1\.1 200/);
    assertEquals(await server.exited, 0);
    assertEquals(await tempFiles(dataDir), []);
  });
});

Deno.test("e2e: SIGTERM with a stalled upload cleans it up after the grace period", async () => {
  await withTempDir("storage-e2e-", async (dataDir) => {
    await using server = await spawnServer(dataDir, ["--shutdown-timeout", "1"]);
    const port = Number(new URL(server.url).port);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode(
      "POST /api/upload?cid=bafkstalled001 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\n" +
        "Content-Length: 1000\r\n\r\nhello",
    ));
    await eventually(async () => await uploadsInFlight(port) === 1, "the upload in its handler");
    server.process.kill("SIGTERM");
    assertEquals(await server.exited, 0);
    conn.close();
    const aborted = server.stderr().split("\n").filter((l) => l.trim().startsWith("{"))
      .map((l) => JSON.parse(l)).find((l) => l.msg === "shutdown: aborted uploads still in flight");
    assertEquals(aborted?.aborted, 1, server.stderr());
    assertEquals(await tempFiles(dataDir), []);
  });
});

Deno.test("e2e: a verified PieceCIDv2 upload works under the start task's permissions", async () => {
  const { PieceHasher } = await import("../../src/kernel/piece_cid/hasher.ts");
  const { pieceCidV2 } = await import("../../src/kernel/piece_cid/cid_codec.ts");
  await withTempDir("storage-e2e-", async (dataDir) => {
    await using server = await spawnServer(dataDir);
    // Several segments, so the hashing Workers run inside the spawned server.
    const body = Uint8Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7) & 0xff);
    const hasher = new PieceHasher();
    hasher.update(body);
    const d = hasher.digest();
    const cid = pieceCidV2(d.root, d.height, d.padding);
    const ok = await fetch(`${server.url}/api/upload?cid=${cid}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body,
    });
    assertEquals(ok.status, 200, await ok.clone().text());
    await ok.body?.cancel();
    body[12345] ^= 1;
    const bad = await fetch(`${server.url}/api/upload?cid=${cid}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body,
    });
    // Verification comes before the stored-bytes comparison: these bytes are not this cid's.
    assertEquals(bad.status, 400);
    assertEquals((await bad.json()).error, "cid_mismatch");
  });
});
