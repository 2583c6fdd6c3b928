/**
 * The operator's safety net, end to end: `main.ts backup` copies a data
 * directory while uploads keep arriving, and the copy serves, as it is,
 * every upload acknowledged before the backup began; `main.ts scrub` (and the
 * server's periodic scrub) finds bytes that rotted, files that vanished and
 * files nobody recorded, and retrieval then answers 503 piece_corrupt until
 * a repair. Commands run as real subprocesses with real permission flags.
 */
import { withOverrides } from "../helpers/overrides.ts";
import { assertEquals, assertMatch, assertOk, assertRejects } from "../helpers/assert.ts";
import { scrubPieces } from "../../src/ops/scrub.ts";
import { systemClock } from "../../src/kernel/clock.ts";
import { KIB, MIB, sha256 } from "../helpers/bytes.ts";
import { bearer, errorOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually, within } from "../helpers/wait.ts";
import { flipByte, pieceFile } from "../helpers/pieces.ts";
import { modeOf, runMain } from "../helpers/main_process.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { createJsonLogger } from "../../src/kernel/log.ts";
import { pieceCidOfStream, sha256Cid } from "../../src/kernel/piece_cid/mod.ts";
import { startServer } from "../../src/server/start.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";
import { RatePacer } from "../../src/ops/rate_pacer.ts";
import { withTempDir } from "../helpers/files.ts";

/** A backup may read the live directory and write only its own. */
function backupFlags(source: string, destination: string): string[] {
  return [
    "--allow-env=STORAGE_*",
    `--allow-read=${source},${destination}`,
    `--allow-write=${destination}`,
  ];
}

/** `main.ts scrub` with the start task's flags, its JSON report parsed. */
async function scrub(dataDir: string): Promise<{ code: number; report: ScrubOutput }> {
  const run = await runMain(["scrub", "--data-dir", dataDir], { dataDir });
  assertOk(run.code === 0 || run.code === 1, `scrub exit ${run.code}: ${run.stderr}`);
  return { code: run.code, report: JSON.parse(run.stdout) };
}

interface ScrubOutput {
  pieces: number;
  passed: number;
  corrupt: { cid: string; problem: string }[];
  missing: { cid: string; problem: string }[];
  cleared: string[];
  orphans: string[];
}

async function uploadOk(server: TestServer, cid: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await server.upload(cid, bytes);
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
}

async function bytesAt(url: string): Promise<{ status: number; bytes: Uint8Array }> {
  const response = await fetch(url);
  return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

interface Acknowledged {
  cid: string;
  bytes: Uint8Array<ArrayBuffer>;
  /** performance.now() when its 200 arrived. */
  at: number;
}

/**
 * Uploads from `workers` loops until stop() (or the bounds): sizes from 1 KiB
 * to 5 MiB, opaque and sha2-256 cids, sponsored and token callers, and now and
 * then a re-upload of an acknowledged cid; one more loop reads acknowledged
 * pieces back and checks them. Every acknowledgement is kept with its time.
 */
function uploadLoad(server: TestServer, token: string, options: { maxUploads: number }) {
  const acknowledged = new Map<string, Acknowledged>();
  const firstAcknowledged = Promise.withResolvers<void>();
  const problems: string[] = [];
  const sizes = [KIB, 16 * KIB, 200 * KIB, MIB];
  let started = 0;
  let stopped = false;
  const uploader = async (worker: number) => {
    while (!stopped && started < options.maxUploads) {
      const n = started++;
      const earlier = [...acknowledged.values()];
      const again = n % 7 === 6 && earlier.length > 0 ? earlier[n % earlier.length] : null;
      const bytes = again?.bytes ?? patternBytes(n % 25 === 24 ? 5 * MIB : sizes[n % 4], n);
      const cid = again?.cid ??
        (n % 3 === 0 ? sha256Cid(await sha256(bytes)) : `bkload${String(n).padStart(6, "0")}`);
      const response = await server.upload(cid, bytes, {
        headers: worker % 2 === 0 ? bearer(token) : {},
      });
      const body = await response.text();
      if (response.status !== 200) problems.push(`${cid}: ${response.status} ${body}`);
      else if (!acknowledged.has(cid)) acknowledged.set(cid, { cid, bytes, at: performance.now() });
      if (acknowledged.size > 0) firstAcknowledged.resolve();
    }
  };
  const reader = async () => {
    await Promise.race([firstAcknowledged.promise, uploading]);
    for (let n = 0; !stopped && acknowledged.size > 0; n++) {
      const pieces = [...acknowledged.values()];
      const piece = pieces[n % pieces.length];
      const got = await bytesAt(`${server.url}/p/${piece.cid}`);
      if (got.status !== 200 || !sameBytes(got.bytes, piece.bytes)) {
        problems.push(`read ${piece.cid}: ${got.status}`);
      }
    }
  };
  const uploading = Promise.all(Array.from({ length: 6 }, (_, i) => uploader(i)));
  const running = Promise.all([uploading, reader()]);
  return {
    acknowledged,
    problems,
    uploads: () => started,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

Deno.test("backup: a copy made under upload load serves every upload acknowledged before it began", async () => {
  await using live = await startTestServer({ args: ["--sponsored-daily-cap", "10GiB"] });
  const { token } = await signup(live);
  const parent = await Deno.makeTempDir({ prefix: "storage-backup-" });
  const destination = `${parent}/copy`;
  try {
    const load = uploadLoad(live, token, { maxUploads: 400 });
    await eventually(() => load.acknowledged.size >= 40, "40 uploads acknowledged", {
      timeoutMs: 30_000,
    });
    const backupStarted = performance.now();
    const uploadsBefore = load.uploads();
    const run = await runMain(["backup", destination, "--data-dir", live.dataDir], {
      flags: backupFlags(live.dataDir, destination),
    });
    const uploadsDuring = load.uploads() - uploadsBefore;
    await within(load.stop(), 60_000, "the upload load stops");
    assertEquals(run.code, 0, run.stderr);
    assertEquals(load.problems, []);
    assertOk(uploadsDuring > 0, "uploads kept arriving while the backup ran");
    const summary = JSON.parse(run.stdout);
    assertEquals([summary.missing, summary.failed, summary.hmacKey], [[], [], true]);
    assertOk(summary.pieces >= 40 && summary.mibPerSecond > 0, run.stdout);
    assertEquals(
      [destination, `${destination}/storage.db`, `${destination}/hmac.key`].map(modeOf),
      ["700", "600", "600"],
    );

    const before = [...load.acknowledged.values()].filter((piece) => piece.at < backupStarted);
    const after = [...load.acknowledged.values()].filter((piece) => piece.at >= backupStarted);
    {
      // The copy is a data directory the start task serves as it is, tokens included.
      await using restored = await spawnServer(destination);
      for (const piece of before) {
        const got = await bytesAt(`${restored.url}/p/${piece.cid}`);
        assertEquals(got.status, 200, `${piece.cid}, acknowledged before the backup`);
        assertOk(sameBytes(got.bytes, piece.bytes), `${piece.cid}: the same bytes`);
      }
      let present = 0;
      for (const piece of after) {
        const got = await bytesAt(`${restored.url}/p/${piece.cid}`);
        assertOk(got.status === 200 || got.status === 404, `${piece.cid}: ${got.status}`);
        if (got.status === 200) present++;
        if (got.status === 200) assertOk(sameBytes(got.bytes, piece.bytes), `${piece.cid} intact`);
      }
      assertEquals(before.length + present, summary.pieces, "the copy holds exactly its pieces");
      const files = await fetch(`${restored.url}/api/files`, { headers: bearer(token) });
      assertEquals(files.status, 200, "a token minted before the backup works on the copy");
      await files.body?.cancel();
    }
    // Exactly the recorded pieces were copied, each verifying: no orphan, nothing missing.
    const { code, report } = await scrub(destination);
    assertEquals([code, report.corrupt, report.missing, report.orphans], [0, [], [], []]);
    assertEquals(report.passed, summary.pieces);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("scrub: finds a flipped byte, a missing file and an orphan; retrieval answers 503 piece_corrupt until repaired", async () => {
  await using server = await startTestServer({ jobIntervals: { "corrupt-watch": 20 } });
  const small = patternBytes(3 * KIB, 1); // served from the small-piece cache
  const large = patternBytes(300 * KIB, 2);
  const { cid: pieceCid } = await pieceCidOfStream(ReadableStream.from([large]));
  const gone = patternBytes(10 * KIB, 3);
  const goneCid = sha256Cid(await sha256(gone));
  const fine = patternBytes(20 * KIB, 4);
  await uploadOk(server, "scrubsmall01", small);
  await uploadOk(server, pieceCid, large);
  await uploadOk(server, goneCid, gone);
  await uploadOk(server, "scrubfine001", fine);
  await server.server.services.digests.whenIdle();
  assertEquals((await bytesAt(`${server.url}/p/scrubsmall01`)).status, 200); // now cached

  await flipByte(pieceFile(server.dataDir, "scrubsmall01"), 100);
  await flipByte(pieceFile(server.dataDir, pieceCid), 200 * KIB);
  // A piece whose digest was never recorded is still checked against its cid.
  server.server.db.prepare("UPDATE pieces SET sha256 = NULL WHERE cid = ?").run(pieceCid);
  await Deno.remove(pieceFile(server.dataDir, goneCid));
  const orphan = "scruborphan1";
  await Deno.mkdir(`${server.dataDir}/pieces/${shardOf(orphan)}`, { recursive: true });
  await Deno.writeFile(pieceFile(server.dataDir, orphan), patternBytes(100, 5));

  const first = await scrub(server.dataDir);
  assertEquals(first.code, 1);
  assertEquals(
    first.report.corrupt.map((c) => [c.cid, c.problem]).sort(),
    [
      [pieceCid, "cid mismatch"],
      ["scrubsmall01", "sha256 mismatch"],
    ].sort(),
  );
  assertEquals(first.report.missing.map((m) => m.cid), [goneCid]);
  assertEquals(first.report.orphans, [orphan]);
  assertEquals([first.report.pieces, first.report.passed], [4, 1]);

  // The cached piece stops within a probe interval of the mark made by another process.
  const corruptAnswer = async (cid: string) => {
    const response = await server.get(`/p/${cid}`);
    return response.status === 503 && (await errorOf(response)).error === "piece_corrupt";
  };
  await eventually(() => corruptAnswer("scrubsmall01"), "the cached corrupt piece answers 503");
  assertOk(await corruptAnswer(pieceCid));
  assertOk(await corruptAnswer(goneCid), "a missing file is a corrupt piece too");
  assertEquals((await server.get(`/p/${pieceCid}`, { method: "HEAD" })).status, 503);
  assertEquals((await bytesAt(`${server.url}/p/scrubfine001`)).status, 200);

  // Other bytes do not repair it; the right ones do, and are served (not the stale cache).
  const wrong = await server.upload("scrubsmall01", patternBytes(3 * KIB, 9));
  assertEquals([wrong.status, (await errorOf(wrong)).error], [409, "cid_conflict"]);
  await uploadOk(server, "scrubsmall01", small);
  await uploadOk(server, pieceCid, large);
  for (const [cid, bytes] of [["scrubsmall01", small], [pieceCid, large]] as const) {
    const got = await bytesAt(`${server.url}/p/${cid}`);
    assertEquals(got.status, 200, cid);
    assertOk(sameBytes(got.bytes, bytes), `${cid}: repaired bytes`);
  }
  // A file put back from a backup is found right by the next scrub, which clears its mark.
  await Deno.writeFile(pieceFile(server.dataDir, goneCid), gone);
  const second = await scrub(server.dataDir);
  assertEquals(second.code, 0);
  assertEquals([second.report.corrupt, second.report.missing], [[], []]);
  assertEquals(second.report.cleared, [goneCid]);
  assertEquals(second.report.passed, 4);
  assertOk(sameBytes((await bytesAt(`${server.url}/p/${goneCid}`)).bytes, gone));
});

Deno.test("backup: a piece whose bytes rotted on disk is not copied, and the backup says so", async () => {
  await using server = await startTestServer();
  const good = patternBytes(3000, 1);
  await uploadOk(server, "backupgood01", good);
  await uploadOk(server, "backuprot001", patternBytes(3000, 2));
  // Small uploads are hashed on the way: both SHA-256s are recorded. Then one rots, unmarked.
  await flipByte(pieceFile(server.dataDir, "backuprot001"), 10);
  const destination = `${await Deno.makeTempDir({ prefix: "backup-rot-" })}/copy`;
  try {
    const run = await runMain(["backup", destination, "--data-dir", server.dataDir], {
      flags: backupFlags(server.dataDir, destination),
    });
    assertEquals(run.code, 1, run.stderr);
    const summary = JSON.parse(run.stdout);
    assertEquals(summary.failed.map((f: { cid: string }) => f.cid), ["backuprot001"]);
    assertMatch(summary.failed[0].problem, /SHA-256/);
    assertEquals(summary.pieces, 1);
    // The good piece is in the copy, byte for byte; the rotted one is not there at all.
    await using restored = await startTestServer({ dataDir: destination });
    const copied = await bytesAt(`${restored.url}/p/backupgood01`);
    assertEquals([copied.status, sameBytes(copied.bytes, good)], [200, true]);
  } finally {
    await Deno.remove(destination.replace(/\/copy$/, ""), { recursive: true });
  }
});

Deno.test("scrub: the server's periodic scrub finds a corrupt piece by itself", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-scrub-" });
  const logs: Record<string, unknown>[] = [];
  const loaded = loadConfig(["--port", "0", "--data-dir", dataDir, "--scrub-rate", "64MiB"], {});
  if (loaded.kind !== "config") throw new Error("unexpected --help");
  const server = await startServer({
    config: loaded.config,
    jobIntervals: { scrub: 20 },
    logger: createJsonLogger((line) => logs.push(JSON.parse(line))),
  });
  try {
    const bytes = patternBytes(40 * KIB, 6);
    const cid = sha256Cid(await sha256(bytes));
    const response = await fetch(`${server.url}/api/upload?cid=${cid}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: bytes,
    });
    assertEquals(response.status, 200, await response.text());
    await eventually(() => logs.some((l) => l.msg === "scrub finished"), "a clean pass");
    assertEquals(logs.filter((l) => l.level === "error"), []);

    await flipByte(pieceFile(dataDir, cid), 7);
    await eventually(async () => {
      const answer = await fetch(`${server.url}/p/${cid}`);
      await answer.body?.cancel();
      return answer.status === 503;
    }, "the periodic scrub marks the piece and retrieval answers 503");
    const found = logs.find((l) => l.msg === "scrub: stored piece failed verification");
    assertEquals([found?.cid, found?.problem], [cid, "sha256 mismatch"]);
  } finally {
    await server.shutdown();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("backup and scrub: a bad command line or destination (used, a dangling link) is one line and exit 2; a used destination is left alone", async () => {
  await withTempDir("storage-backup-args-", async (dataDir) => {
    {
      await using _server = await startTestServer({ dataDir });
    }
    const used = `${dataDir}/used`;
    await Deno.mkdir(used);
    await Deno.writeTextFile(`${used}/keep.txt`, "mine");
    const dangling = `${dataDir}/dangling`;
    await Deno.symlink(`${dataDir}/nowhere`, dangling);
    const flags = backupFlags(dataDir, `${dataDir}/`);
    const runs = [
      [await runMain(["backup", "--data-dir", dataDir], { flags }), /usage: main\.ts backup DEST/],
      [await runMain(["backup", used, "--data-dir", dataDir], { flags }), /is not empty/],
      [
        await runMain(["backup", dangling, "--data-dir", dataDir], { flags }),
        /dangling is a symbolic link to .*nowhere, which does not exist/,
      ],
      [await runMain(["backup", `${dataDir}/x`, "--nope"], { flags }), /Unknown option '--nope'/],
      [
        await runMain(["scrub", "extra", "--data-dir", dataDir], { flags }),
        /usage: main\.ts scrub/,
      ],
      [await runMain(["scrub", "--data-dir", `${dataDir}/none`], { flags }), /check --data-dir/],
    ] as const;
    for (const [run, pattern] of runs) {
      assertEquals(run.code, 2, run.stderr);
      const lines = run.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, run.stderr);
      assertMatch(lines[0], /^error: /);
      assertMatch(lines[0], pattern);
    }
    assertEquals([...Deno.readDirSync(used)].map((e) => e.name), ["keep.txt"]);
    assertEquals(await Deno.readTextFile(`${used}/keep.txt`), "mine");
  });
});

Deno.test("scrub: the rate pacer holds a reader to its bytes per second", async () => {
  let now = 0;
  const slept: number[] = [];
  const pacer = new RatePacer({
    perSecond: 4 * MIB,
    now: () => now,
    sleep: (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    },
  });
  for (let i = 0; i < 40; i++) await pacer.take(256 * KIB); // 10 MiB
  // 2.5 s at 4 MiB/s; a reader may run one 50 ms burst ahead.
  assertEquals(Math.round(now), 2450);
  assertOk(slept.length <= 40);
  now += 10_000; // a long pause earns no credit beyond the burst
  await pacer.take(4 * MIB);
  assertEquals(Math.round(slept.at(-1)!), 950);
});

Deno.test("scrub: running out of file descriptors stops the scrub and marks nothing", async () => {
  await using server = await startTestServer();
  await uploadOk(server, "scrubemfile01", patternBytes(2000, 5));
  const { store, services } = server.server;
  // The operating system refuses to open any file: the process's trouble, not the pieces'.
  const exhausted = withOverrides(store, {
    open: () => Promise.reject(new Error("Too many open files (os error 24)")),
  });
  await assertRejects(
    () =>
      scrubPieces({
        store: exhausted,
        records: services.records,
        bytesPerSecond: 1024 * MIB,
        hashPool: null,
        clock: systemClock,
      }),
    /os error 24/,
  );
  assertEquals(await services.records.corruptPieceCids(), []);
  const piece = await server.get("/p/scrubemfile01");
  assertEquals(piece.status, 200);
  await piece.body?.cancel();
});

Deno.test("backup: a removed piece's row is copied without bytes; the backup answers 410 and scrubs clean", async () => {
  await using server = await startTestServer();
  await uploadOk(server, "backupkeep001", patternBytes(3000, 31));
  await uploadOk(server, "backupgone001", patternBytes(2000, 32));
  // A sponsored deal cannot be deleted: judged as at a year on, its term is long over.
  const swept = await server.server.gc.sweep({ asOf: Date.now() + 365 * 86_400_000 });
  assertEquals(swept?.removedPieces, 2);
  await uploadOk(server, "backupkeep001", patternBytes(3000, 31)); // stored again
  await withTempDir("backup-removed-", async (destination) => {
    const run = await runMain(["backup", destination, "--data-dir", server.dataDir], {
      flags: backupFlags(server.dataDir, destination),
    });
    assertEquals(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout);
    assertEquals([summary.pieces, summary.missing, summary.failed], [1, [], []]);
    const { code, report } = await scrub(destination);
    assertEquals([code, report.missing, report.orphans], [0, [], []]);
    await using restored = await startTestServer({ dataDir: destination });
    assertEquals((await restored.get("/p/backupkeep001")).status, 200);
    const gone = await restored.get("/p/backupgone001");
    assertEquals([gone.status, (await gone.json()).error], [410, "gone"]);
  });
});

Deno.test("backup: the pieces' PieceCIDv2 and v1 travel with their rows", async () => {
  await using live = await startTestServer();
  const parent = await Deno.makeTempDir({ prefix: "storage-backup-" });
  const destination = `${parent}/copy`;
  try {
    await uploadOk(live, "backupopaque001", patternBytes(200 * KIB, 5));
    await uploadOk(live, "backupwaiting01", patternBytes(3 * KIB, 6));
    await live.server.services.digests.whenIdle();
    // One piece whose v2 is not known yet: it travels as not known, for the copy's pass.
    live.server.db.exec(
      "UPDATE pieces SET piece_cid_v2 = NULL, piece_cid_v1 = NULL WHERE cid = 'backupwaiting01'",
    );
    const query = "SELECT cid, piece_cid_v2, piece_cid_v1 FROM pieces ORDER BY cid";
    const rows = live.server.db.prepare(query).all().map((row) => ({ ...row }));
    assertOk(rows[0].piece_cid_v2 !== null, JSON.stringify(rows));
    const run = await runMain(["backup", destination, "--data-dir", live.dataDir], {
      flags: backupFlags(live.dataDir, destination),
    });
    assertEquals(run.code, 0, run.stderr);
    const { DatabaseSync } = await import("node:sqlite");
    const copy = new DatabaseSync(`${destination}/storage.db`, { readOnly: true });
    try {
      assertEquals(copy.prepare(query).all().map((row) => ({ ...row })), rows);
    } finally {
      copy.close();
    }
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
