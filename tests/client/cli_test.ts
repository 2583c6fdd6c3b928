/**
 * The `storage` CLI end to end: the real server in-process (startTestServer,
 * caps lowered so small files split), and the CLI as a separate process with
 * exactly the permission flags of the `cli` task in deno.json, the way a
 * user runs it. Everything is observed, never slept on: the server's log
 * lines, its data directory, the CLI's exit status, stdout and stderr.
 */
import { withOverrides } from "../helpers/overrides.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { listFiles, withTempDir } from "../helpers/files.ts";
import { jtiOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { startFakePdp } from "../helpers/fake_pdp/mod.ts";
import { FAST_PDP, startHandoffServer } from "../helpers/handoff.ts";
import { runDeno } from "../helpers/main_process.ts";
import { startSmtpSink } from "../helpers/smtp_sink.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";
import { MANIFEST_CONTENT_TYPE } from "../../src/client/sdk/types.ts";
import {
  assertFailure,
  cli,
  cliOk,
  dirPrefix,
  KIB,
  randomBytes,
  ROOT,
  spawnCli,
} from "../helpers/cli.ts";
import type { CliRun } from "../helpers/cli.ts";

/** The server's own answer to POST /api/piece-cids for these bytes. */
async function serverPieceCid(server: TestServer, token: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await server.get("/api/piece-cids", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body: bytes,
  });
  assertEquals(response.status, 200);
  return (await response.json()) as { cid: string; size: number };
}

/** The request log lines of uploads, in order. */
function uploadRequests(server: TestServer): Record<string, unknown>[] {
  return server.logs.filter((l) => l.msg === "request" && l.route === "/api/upload");
}

async function inFlight(server: TestServer): Promise<number> {
  return (await (await server.get("/healthz")).json()).uploads.inFlight;
}

/** Server with piece caps lowered to 64 KiB, and a token for it. */
async function smallPieceServer(args: string[] = []) {
  const server = await startTestServer({ args: ["--token-max-file-size", "64KiB", ...args] });
  const { token } = await signup(server);
  return { server, token, env: { STORAGE_URL: server.url, STORAGE_TOKEN: token } };
}

Deno.test("cli: cid matches the server's POST /api/piece-cids, for one file and several", async (t) => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  await withTempDir(dirPrefix(t), async (dir) => {
    const small = randomBytes(1000);
    const larger = randomBytes(300 * KIB + 7);
    await Deno.writeFile(`${dir}/small.bin`, small);
    await Deno.writeFile(`${dir}/larger.bin`, larger);
    const expected = [
      await serverPieceCid(server, token, small),
      await serverPieceCid(server, token, larger),
    ];

    const one = JSON.parse((await cliOk(["cid", "small.bin", "--json"], { cwd: dir })).stdout);
    assertEquals(one, { path: "small.bin", cid: expected[0].cid, size: 1000 });

    const several = await cliOk(["cid", "--json", "small.bin", "larger.bin"], { cwd: dir });
    assertEquals(JSON.parse(several.stdout), {
      files: [
        { path: "small.bin", cid: expected[0].cid, size: small.length },
        { path: "larger.bin", cid: expected[1].cid, size: larger.length },
      ],
    });

    const text = await cliOk(["cid", "small.bin", "larger.bin"], { cwd: dir });
    assertEquals(text.stdout, `${expected[0].cid}  small.bin\n${expected[1].cid}  larger.bin\n`);
    // Nothing was uploaded: cid works offline.
    assertEquals(uploadRequests(server).length, 0);
  });
});

Deno.test("cli: upload splits a file over the cap into pieces and a manifest; download -o gets it back byte-identical", async (t) => {
  const { server, env } = await smallPieceServer();
  await using _ = server;
  await withTempDir(dirPrefix(t), async (dir) => {
    const bytes = randomBytes(200 * KIB + 123);
    await Deno.writeFile(`${dir}/video.mp4`, bytes);
    const upload = await cliOk(["upload", "video.mp4", "--piece-size", "64KiB", "--json"], {
      cwd: dir,
      env,
    });
    const result = JSON.parse(upload.stdout);
    assertEquals(Object.keys(result).sort(), [
      "cid",
      "deals",
      "fileUrl",
      "manifest",
      "path",
      "pieces",
      "retrievalUrl",
      "size",
    ]);
    assertEquals(result.size, bytes.length);
    assertEquals(result.manifest, true);
    assertEquals(result.pieces.map((p: { size: number }) => p.size), [
      64 * KIB,
      64 * KIB,
      64 * KIB,
      8 * KIB + 123,
    ]);
    assertEquals(result.deals.length, 5, "four pieces and the manifest");
    assertEquals(result.retrievalUrl, `${server.url}/p/${result.cid}`);
    // The URL to share is /f/: the whole file, served from the pieces.
    assertEquals(result.fileUrl, `${server.url}/f/${result.cid}`);
    assertEquals(new Uint8Array(await (await fetch(result.fileUrl)).arrayBuffer()), bytes);
    // The cid is the manifest's, stored with the manifest content type.
    const manifest = await server.get(`/p/${result.cid}`);
    assertEquals(manifest.headers.get("content-type"), MANIFEST_CONTENT_TYPE);
    const body = await manifest.json();
    assertEquals(body.name, "video.mp4");
    assertEquals(body.contentType, "video/mp4");
    assertEquals(
      body.pieces.map((p: { cid: string }) => p.cid),
      result.pieces.map((p: { cid: string }) => p.cid),
    );

    const download = await cliOk(["download", result.cid, "-o", "copy.mp4", "--json"], {
      cwd: dir,
      env,
    });
    assertEquals(JSON.parse(download.stdout), {
      cid: result.cid,
      path: "copy.mp4",
      size: bytes.length,
      verified: true,
    });
    assertEquals(await Deno.readFile(`${dir}/copy.mp4`), bytes);
    // Only the two files: no temporary file left behind.
    assertEquals(await listFiles(dir), ["copy.mp4", "video.mp4"]);

    // -o - streams the same bytes to stdout, and needs no token.
    const toStdout = await cli(["download", result.cid, "-o", "-"], {
      env: { STORAGE_URL: server.url },
    });
    assertEquals(toStdout.code, 0, toStdout.stderr);
    assertEquals(toStdout.stdoutBytes, bytes);
  });
});

Deno.test("cli: text output, --json shapes of the account commands, and several files at once", async (t) => {
  // --query-token off: the CLI (and the SDK under it) never sends the token as ?token=.
  await using server = await startTestServer({ args: ["--query-token", "off"] });
  await withTempDir(dirPrefix(t), async (dir) => {
    const url = { STORAGE_URL: server.url };
    const signed = JSON.parse(
      (await cliOk(["signup", "--email", "cli@example.org", "--label", "laptop", "--json"], {
        env: url,
      })).stdout,
    );
    assertEquals(
      Object.keys(signed).sort(),
      ["email", "expiresAt", "jti", "quotaMb", "scopes", "token", "userId"],
    );
    const env = { ...url, STORAGE_TOKEN: signed.token };
    const text = await cliOk([
      "signup",
      "--email",
      "cli@example.org",
      "--label",
      "ci",
      "--scopes",
      "put",
      "--quota-mb",
      "10",
    ], { env: url });
    assertMatch(text.stdout, /^pk_live_\S+\n/);
    assertMatch(text.stdout, /scopes put, 10 MiB a day/);

    await Deno.writeTextFile(`${dir}/a.txt`, "hello cli\n");
    await Deno.writeFile(`${dir}/b.bin`, randomBytes(5000));
    const single = JSON.parse(
      (await cliOk(["upload", "a.txt", "--json"], { cwd: dir, env })).stdout,
    );
    assertEquals(single.manifest, false);
    assertEquals(single.pieces.length, 1);
    assertEquals(single.pieces[0].cid, single.cid);
    assertEquals(single.deals.length, 1);
    assertMatch(single.cid, /^bafkzcib/);
    const stored = await server.get(`/p/${single.cid}`);
    assertEquals(stored.headers.get("content-type"), "text/plain");
    assertEquals(await stored.text(), "hello cli\n");

    const both = JSON.parse(
      (await cliOk(["upload", "a.txt", "b.bin", "--json"], { cwd: dir, env })).stdout,
    );
    assertEquals(both.files.map((f: { path: string }) => f.path), ["a.txt", "b.bin"]);
    // a.txt was stored already, and this user owns a deal on it: nothing sent, no new deal.
    assertEquals(both.files.map((f: { deals: string[] }) => f.deals.length), [0, 1]);
    assertMatch((await cliOk(["upload", "a.txt"], { cwd: dir, env })).stdout, /yours already/);
    // Another user uploading the same bytes sends nothing either, but gets a deal of their own.
    const otherUser = JSON.parse(
      (await cliOk(["signup", "--email", "other@example.org", "--label", "x", "--json"], {
        env: url,
      })).stdout,
    );
    const theirs = await cliOk(["upload", "a.txt"], {
      cwd: dir,
      env: { ...url, STORAGE_TOKEN: otherUser.token },
    });
    assertMatch(theirs.stdout, /stored already: a deal made without sending the bytes/);
    const theirFiles = JSON.parse(
      (await cliOk(["files", "--json"], { env: { ...url, STORAGE_TOKEN: otherUser.token } }))
        .stdout,
    );
    assertEquals(theirFiles.files.map((f: { cid: string }) => f.cid), [single.cid]);
    await Deno.writeFile(`${dir}/c.bin`, randomBytes(5000));
    const human = await cliOk([
      "upload",
      "c.bin",
      "--name",
      "renamed.bin",
      "--type",
      "application/x-test",
    ], { cwd: dir, env });
    assertMatch(human.stdout, /^c\.bin: 4\.9 KiB\n/);
    assertMatch(human.stdout, new RegExp(`url  ${server.url}/p/bafkzcib`));

    const files = JSON.parse((await cliOk(["files", "--limit", "2", "--json"], { env })).stdout);
    assertEquals(files.files.length, 2);
    assertEquals(files.files[0].filename, "renamed.bin");
    assertEquals(files.files[0].contentType, "application/x-test");
    assertOk(typeof files.nextCursor === "string");
    const next = JSON.parse(
      (await cliOk(["files", "--cursor", files.nextCursor, "--json"], { env })).stdout,
    );
    assertEquals(next.files.length, 1);
    assertEquals(next.nextCursor, null);
    const filesText = await cliOk(["files", "--limit", "2"], { env });
    assertMatch(filesText.stdout, /^CID\s+SIZE\s+CREATED/);
    assertMatch(filesText.stdout, /more: storage files --cursor \S+\n$/);

    const limits = JSON.parse(
      (await cliOk(["limits", "--size", "2MiB", "--json"], { env })).stdout,
    );
    assertEquals(limits.tier, "token");
    assertEquals(limits.size, 2 * 1024 * 1024);
    assertEquals(limits.accepted, true);
    const sponsored = await cliOk(["limits"], { env: url });
    assertMatch(sponsored.stdout, /^tier: sponsored\n/);

    const usage = JSON.parse((await cliOk(["usage", "--json"], { env })).stdout);
    assertEquals(usage.days.at(-1).uploads, 3);
    assertMatch((await cliOk(["usage"], { env })).stdout, /uploaded/);

    const tokens = JSON.parse((await cliOk(["tokens", "list", "--json"], { env })).stdout);
    assertEquals(tokens.tokens.length, 2);
    const other = tokens.tokens.find((x: { current: boolean }) => !x.current);
    const listed = await cliOk(["tokens", "list"], { env });
    assertMatch(listed.stdout, /current/);
    const revoked = JSON.parse(
      (await cliOk(["tokens", "revoke", other.jti, "--json"], { env })).stdout,
    );
    assertEquals(revoked.revoked, true);

    const extended = JSON.parse(
      (await cliOk(["extend", files.files[0].dealId, "--json"], { env })).stdout,
    );
    assertEquals(extended.term, "730 days");
    assertMatch((await cliOk(["extend", files.files[0].dealId], { env })).stdout, /1095 days/);
    assertMatch((await cliOk(["--help"])).stdout, /^Usage: storage COMMAND/);
  });
});

Deno.test("cli: signup on a --signup verify server, then signup verify with the mailed code", async () => {
  await using sink = startSmtpSink();
  await using server = await startTestServer({
    args: ["--signup", "verify", "--smtp-url", sink.url, "--mail-from", "storage@example.org"],
  });
  const env = { STORAGE_URL: server.url };
  const started = await cliOk(["signup", "--email", "v@example.org", "--label", "l"], { env });
  assertMatch(started.stdout, /storage signup verify --email v@example\.org --code CODE/);
  const match = /is (\d{8})\./.exec((await sink.nextMessage()).data.replace(/=\r\n/g, ""));
  assertOk(match);
  const wrong = await cli(["signup", "verify", "--email", "v@example.org", "--code", "00000000"], {
    env,
  });
  assertFailure(wrong, 1, /^error: invalid_code: /);
  const verified = await cliOk([
    "signup",
    "verify",
    "--email",
    "v@example.org",
    "--code",
    match[1],
    "--json",
  ], { env });
  assertMatch(JSON.parse(verified.stdout).token, /^pk_live_/);
});

Deno.test("cli: an interrupted upload, run again, sends only the pieces the server does not have", async (t) => {
  // The store lets `allowed` pieces through, then holds every further upload before reading its
  // body, so the CLI is mid-upload, deterministically, when it is killed.
  const allowed = 3;
  let committed = 0;
  let held = 0;
  const gate = Promise.withResolvers<void>();
  await using server = await startTestServer({
    args: ["--token-max-file-size", "64KiB"],
    wrapStore: (store) =>
      withOverrides(store, {
        stage: async (body, options) => {
          if (committed >= allowed) {
            held++;
            await gate.promise;
          }
          const staged = await store.stage(body, options);
          return withOverrides(staged, {
            commit: async (key) => {
              await staged.commit(key);
              committed++;
            },
          });
        },
      }),
  });
  const { token } = await signup(server);
  const env = { STORAGE_URL: server.url, STORAGE_TOKEN: token };
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    const bytes = randomBytes(10 * 64 * KIB + 1000); // 11 pieces
    await Deno.writeFile(`${dir}/big.bin`, bytes);
    const args = ["upload", "big.bin", "--piece-size", "64KiB", "--json", "--retries", "0"];
    const child = spawnCli(args, { cwd: dir, env }).spawn();
    try {
      await eventually(() => held > 0, "an upload held after the first pieces", {
        timeoutMs: 30_000,
      });
      child.kill("SIGKILL");
    } finally {
      await child.output();
      gate.resolve();
    }
    await eventually(async () => (await inFlight(server)) === 0, "the killed uploads to end");
    const first = uploadRequests(server);
    const storedBefore = first.filter((l) => l.status === 200).length;
    assertEquals(storedBefore, committed);
    assertOk(storedBefore >= allowed && storedBefore < 11, `stored ${storedBefore}`);

    const rerun = await cliOk(args, { cwd: dir, env });
    const result = JSON.parse(rerun.stdout);
    const sent = uploadRequests(server).slice(first.length);
    assertEquals(sent.length, 11 - storedBefore + 1, "the missing pieces and the manifest");
    assertEquals(sent.every((l) => l.status === 200), true);
    assertEquals(result.pieces.length, 11);
    // The pieces of the first run are this user's already: no second deal, nothing charged twice.
    assertEquals(
      result.pieces.filter((p: { via: string }) => p.via === "owned").length,
      storedBefore,
    );
    assertEquals(result.deals.length, 11 - storedBefore + 1);
    const copy = await cli(["download", result.cid, "-o", "-"], { env });
    assertEquals(copy.stdoutBytes, bytes);
  } finally {
    gate.resolve();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: a piece corrupted on the server's disk makes download exit 3 and leave no file", async (t) => {
  const { server, env } = await smallPieceServer(["--small-piece-cache", "0"]);
  await using _ = server;
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    const bytes = randomBytes(3 * 64 * KIB + 500);
    await Deno.writeFile(`${dir}/data.bin`, bytes);
    const uploaded = JSON.parse(
      (await cliOk(["upload", "data.bin", "--piece-size", "64KiB", "--json"], { cwd: dir, env }))
        .stdout,
    );
    const victim: string = uploaded.pieces[1].cid;
    const path = `${server.dataDir}/pieces/${shardOf(victim)}/${victim}`;
    const stored = await Deno.readFile(path);
    stored[1000] ^= 0xff; // same size, different bytes
    await Deno.writeFile(path, stored);

    await Deno.mkdir(`${dir}/out`);
    const run = await cli(["download", uploaded.cid, "-o", "out/data.bin"], { cwd: dir, env });
    assertFailure(run, 3, /^error: verification_failed: /);
    assertEquals(await listFiles(`${dir}/out`), [], "no output file and no temporary file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: Ctrl-C during a download exits 130 and removes the temporary file", async (t) => {
  // The store serves the first 512 KiB of the piece, then holds the rest until released, so the
  // download is mid-way, with bytes in its temporary file, when the CLI gets SIGINT.
  const release = Promise.withResolvers<void>();
  let stalled = false;
  await using server = await startTestServer({
    args: ["--small-piece-cache", "0"],
    wrapStore: (store) =>
      withOverrides(store, {
        open: async (cid) => {
          const piece = await store.open(cid);
          if (!piece) return piece;
          const reader = piece.body.getReader();
          let sent = 0;
          const body = new ReadableStream<Uint8Array>({
            async pull(controller) {
              if (sent >= 512 * KIB) {
                stalled = true;
                await release.promise;
              }
              const { value, done } = await reader.read();
              if (done) return controller.close();
              sent += value.byteLength;
              controller.enqueue(value);
            },
            cancel: (reason) => reader.cancel(reason),
          });
          return { size: piece.size, body };
        },
      }),
  });
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    const env = { STORAGE_URL: server.url };
    await Deno.writeFile(`${dir}/big.bin`, randomBytes(4 * 1024 * KIB));
    const { cid } = JSON.parse(
      (await cliOk(["upload", "big.bin", "--json"], { cwd: dir, env })).stdout,
    );
    await Deno.mkdir(`${dir}/out`);
    const child = spawnCli(["download", cid, "-o", "out/big.bin"], { cwd: dir, env }).spawn();
    let output: Deno.CommandOutput;
    try {
      await eventually(
        async () => {
          if (!stalled) return false;
          const [temp] = await listFiles(`${dir}/out`);
          return temp !== undefined && (await Deno.stat(`${dir}/out/${temp}`)).size > 0;
        },
        "part of the download in its temporary file",
        { timeoutMs: 30_000 },
      );
      assertMatch((await listFiles(`${dir}/out`))[0], /^\.big\.bin\.[0-9a-f]+\.part$/);
      child.kill("SIGINT");
    } finally {
      output = await child.output();
      release.resolve();
    }
    assertFailure(
      {
        code: output.code,
        stdout: new TextDecoder().decode(output.stdout),
        stderr: new TextDecoder().decode(output.stderr),
        stdoutBytes: output.stdout,
      },
      130,
      /^error: interrupted$/,
    );
    assertEquals(await listFiles(`${dir}/out`), [], "the temporary file is gone");
  } finally {
    release.resolve();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: download does not replace an existing file without --force", async (t) => {
  await using server = await startTestServer();
  const dir = await Deno.makeTempDir({ prefix: dirPrefix(t) });
  try {
    const env = { STORAGE_URL: server.url };
    await Deno.writeTextFile(`${dir}/new.txt`, "new bytes\n");
    const { cid } = JSON.parse(
      (await cliOk(["upload", "new.txt", "--json"], { cwd: dir, env })).stdout,
    );
    await Deno.writeTextFile(`${dir}/target.txt`, "keep me\n");
    const refused = await cli(["download", cid, "-o", "target.txt"], { cwd: dir, env });
    assertFailure(refused, 2, /^error: target\.txt exists; pass --force/);
    assertEquals(await Deno.readTextFile(`${dir}/target.txt`), "keep me\n");
    assertEquals(uploadRequests(server).length, 1);

    await cliOk(["download", cid, "-o", "target.txt", "--force"], { cwd: dir, env });
    assertEquals(await Deno.readTextFile(`${dir}/target.txt`), "new bytes\n");
    // A directory as -o: the file goes inside it, named by its cid.
    await Deno.mkdir(`${dir}/into`);
    await cliOk(["download", cid, "-o", "into"], { cwd: dir, env });
    assertEquals(await Deno.readTextFile(`${dir}/into/${cid}`), "new bytes\n");
    assertEquals(await listFiles(dir), [`into/${cid}`, "new.txt", "target.txt"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: quota exhaustion exits 1 with quota_exceeded and is not retried", async (t) => {
  await using server = await startTestServer();
  const { token } = await signup(server, { quotaMb: 1 });
  await withTempDir(dirPrefix(t), async (dir) => {
    await Deno.writeFile(`${dir}/big.bin`, patternBytes(1024 * KIB + 1));
    const run = await cli(["upload", "big.bin"], {
      cwd: dir,
      env: { STORAGE_URL: server.url, STORAGE_TOKEN: token },
    });
    assertFailure(run, 1, /^error: quota_exceeded: .+/);
    assertEquals(run.stdout, "");
    // One request, refused (its Retry-After runs to midnight), and not repeated.
    assertEquals(uploadRequests(server).map((l) => l.status), [429]);
  });
});

Deno.test("cli: a server that cannot be reached exits 4", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const run = await cli(["limits", "--server", `http://127.0.0.1:${port}`, "--retries", "1"]);
  assertFailure(run, 4, /^error: network: /);
  // The line says what to check next: is the server running, and is it the right address?
  assertMatch(
    run.stderr,
    new RegExp(
      `the server at http://127\\.0\\.0\\.1:${port} may not be running \\(--server or STORAGE_URL`,
    ),
  );
  const upload = await cli(["upload", "deno.json", "--retries", "0"], {
    env: { STORAGE_URL: `http://127.0.0.1:${port}` },
  });
  assertFailure(upload, 4, /^error: network: .*may not be running/);
});

Deno.test("cli: an account command without a token says where a token comes from", async () => {
  await using server = await startTestServer();
  const run = await cli(["files"], { env: { STORAGE_URL: server.url } });
  assertFailure(
    run,
    1,
    /^error: invalid_token: this command needs a token: set STORAGE_TOKEN \(storage signup gets you one\)$/,
  );
});

Deno.test("cli: bad flags, arguments and files exit 2 with one line", async (t) => {
  const cases: [string[], RegExp][] = [
    [["upload", "--bogus", "x"], /^error: Unknown option '--bogus'/],
    [["upload"], /^error: "upload" takes FILE…, got none/],
    [["upload", "no-such-file.bin"], /^error: cannot read no-such-file\.bin: no such file/],
    [["upload", "src"], /^error: cannot read src: not a regular file/],
    [["upload", "a.txt", "--piece-size", "12XB"], /^error: --piece-size must be a size/],
    [["upload", "a.txt", "--concurrency", "0"], /^error: --concurrency must be a whole number/],
    [["upload", "a.txt", "b.txt", "--name", "x"], /^error: --name names one file/],
    [["upload", "/dev/null"], /^error: cannot read \/dev\/null: not a regular file/],
    [["upload", "empty.txt"], /^error: cannot upload empty\.txt: it is empty/],
    [["download"], /^error: "download" takes CID/],
    [["download", "a", "b"], /^error: "download" takes CID, got a b/],
    [
      ["download", "bafkexample1", "-o", "no/such/dir/x"],
      /^error: cannot write no\/such\/dir\/x: /,
    ],
    [["frobnicate"], /^error: unknown command "frobnicate"/],
    [["tokens"], /^error: "tokens" needs "list" or "revoke JTI"/],
    [[], /^error: no command given/],
    [["signup", "--label", "x"], /^error: --email is required/],
    [["files", "--limit", "x"], /^error: --limit must be a whole number from 1 to 1000/],
    [["usage", "--from", "yesterday"], /^error: --from must be a day like/],
    [["limits", "--server", "ftp://example.org"], /^error: --server must be an http\(s\) URL/],
    [["limits", "--token", "secret"], /^error: the token \(--token or STORAGE_TOKEN\) must start/],
  ];
  await withTempDir(dirPrefix(t), async (dir) => {
    await Deno.writeFile(`${dir}/empty.txt`, new Uint8Array(0));
    await Deno.writeTextFile(`${dir}/a.txt`, "a\n");
    await Deno.writeTextFile(`${dir}/b.txt`, "b\n");
    await Deno.mkdir(`${dir}/src`);
    for (const [args, line] of cases) {
      const run = await cli(args, { cwd: dir });
      assertFailure(run, 2, line);
      assertEquals(run.stdout, "", `storage ${args.join(" ")} prints nothing on stdout`);
    }
    assertEquals((await cli(["limits", "--token", "secret"])).stderr.includes("secret"), false);
  });
});

Deno.test("cli: the token is never printed, on success or failure", async (t) => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const jti = jtiOf(token);
  await withTempDir(dirPrefix(t), async (dir) => {
    await Deno.writeTextFile(`${dir}/f.txt`, "secret-free\n");
    const viaEnv = { STORAGE_URL: server.url, STORAGE_TOKEN: token };
    const viaFlag = ["--server", server.url, "--token", token];
    const runs: CliRun[] = [];
    for (const json of [[], ["--json"]]) {
      runs.push(await cli(["upload", "f.txt", ...json], { cwd: dir, env: viaEnv }));
      runs.push(await cli(["files", ...json, ...viaFlag]));
      runs.push(await cli(["tokens", "list", ...json], { env: viaEnv }));
      runs.push(await cli(["limits", ...json, ...viaFlag]));
      runs.push(await cli(["usage", ...json], { env: viaEnv }));
    }
    runs.push(await cli(["extend", "stage-nosuchdeal", ...viaFlag]));
    runs.push(await cli(["upload", "--bogus", ...viaFlag]));
    runs.push(await cli(["tokens", "revoke", jti], { env: viaEnv }));
    runs.push(await cli(["files", ...viaFlag])); // revoked now: 401
    runs.push(
      await cli(["files", "--server", "http://127.0.0.1:1", "--retries", "0", "--token", token]),
    );
    assertEquals(runs.map((r) => r.code), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 4]);
    assertMatch(runs.at(-2)!.stderr, /^error: revoked_token: /);
    const signature = token.split(".").at(-1)!;
    for (const run of runs) {
      for (const secret of [token, signature]) {
        assertEquals(run.stdout.includes(secret), false, run.stdout);
        assertEquals(run.stderr.includes(secret), false, run.stderr);
      }
    }
  });
});

Deno.test("cli: `deno task cli` reads and writes files relative to where it was run", async (t) => {
  await using server = await startTestServer();
  await withTempDir(dirPrefix(t), async (dir) => {
    await Deno.writeTextFile(`${dir}/here.txt`, "relative paths\n");
    // INIT_CWD is left out of the environment on purpose: deno task sets it to `cwd`.
    const output = await runDeno(
      ["task", "-q", "--config", `${ROOT}deno.json`, "cli", "upload", "here.txt", "--json"],
      { cwd: dir, clearEnv: true, env: { STORAGE_URL: server.url } },
    );
    assertEquals(output.code, 0, output.stderr);
    const { cid } = JSON.parse(output.stdout);
    assertEquals(await (await server.get(`/p/${cid}`)).text(), "relative paths\n");
  });
});

Deno.test("cli: the documented `deno task` invocation never echoes a --token to stderr", async () => {
  const invocation = /npx -y deno@2\.9\.6 task((?: -\S+)*) cli\b/g;
  const documented: string[] = [];
  for (const doc of ["README.md", "docs/client.md", "docs/operations.md"]) {
    const text = await Deno.readTextFile(`${ROOT}${doc}`);
    for (const [, flags] of text.matchAll(invocation)) documented.push(`${doc}:${flags.trim()}`);
  }
  assertOk(documented.length >= 4, `found ${documented.length}`);
  assertEquals(documented.filter((d) => !d.endsWith("-q")), [], "every documented run is quiet");
  // And quiet means it: the documented form, run for real with a token on its command line.
  await using server = await startTestServer();
  const { token } = await signup(server);
  const output = await runDeno(
    ["task", "-q", "cli", "limits", "--server", server.url, "--token", token],
    { cwd: ROOT, clearEnv: true },
  );
  assertEquals(output.code, 0, output.stderr);
  assertEquals(output.stderr.includes(token), false, output.stderr);
});

Deno.test("cli: on a server that hands pieces off, upload --json and files show each deal's hand-off", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  await withTempDir("cli-handoff-", async (dir) => {
    await Deno.writeFile(`${dir}/a.bin`, patternBytes(3000, 5));
    const env = { STORAGE_URL: server.url, STORAGE_TOKEN: token };
    const uploaded = JSON.parse(
      (await cliOk(["upload", `${dir}/a.bin`, "--json"], { env })).stdout,
    );
    const [dealId] = uploaded.deals;
    assertOk(["queued", "pulling", "adding", "live"].includes(uploaded.handoff[dealId].state));
    await eventually(
      async () => {
        const files = await cliOk(["files"], { env });
        return /PROVIDER/.test(files.stdout) && /live \d+\/\d+/.test(files.stdout);
      },
      "storage files to show the piece live at the provider",
      { timeoutMs: 20_000 },
    );
    const json = JSON.parse((await cliOk(["files", "--json"], { env })).stdout);
    assertEquals(json.files[0].handoff.state, "live");
  });
});
