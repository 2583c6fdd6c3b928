/**
 * What a dead instance leaves in the bucket goes once it is known dead, with
 * no restart: instance A (main.ts, PostgreSQL + S3) is SIGKILLed with an
 * upload half sent (an unfinished multipart upload under its staging
 * prefix) and a staging object of its own left (what a kill after the copy,
 * before the staging delete, leaves). The survivor B, which finds A dead by
 * A's silent heartbeat (shortened here to 2 s), aborts and deletes them on
 * its leftover sweep, while its own upload in flight is left alone and
 * completes, and a leftover of unknown writer (a key from before writers
 * were named) waits for its 24 h.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB } from "../helpers/bytes.ts";
import { readResponse, writeAll } from "../helpers/raw_http.ts";
import { eventually } from "../helpers/wait.ts";
import { patternBytes } from "../helpers/server.ts";
import { objectKeys, putObject, uploadKeys } from "../helpers/s3.ts";
import { scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";

/** Sends an upload's head and the first `sent` bytes of `body`; the rest is the caller's. */
async function startUpload(port: number, cid: string, body: Uint8Array, sent: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const head = `POST /api/upload?cid=${cid} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
    `Content-Type: application/octet-stream\r\nContent-Length: ${body.byteLength}\r\n\r\n`;
  await writeAll(conn, new TextEncoder().encode(head));
  await writeAll(conn, body.subarray(0, sent));
  return conn;
}

Deno.test({
  name: "dead instance: its unfinished multipart upload and staging objects go once it is dead",
  ignore: !scaleOutAvailable(),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => deadInstanceLeftovers(),
});

async function deadInstanceLeftovers(): Promise<void> {
  await using deployment = await scaleOutForTests({ args: ["--log-requests", "false"] });
  const { s3 } = deployment;
  const doomed = await deployment.spawnInstance();
  const doomedPort = Number(new URL(doomed.url).port);
  const halfSent = await startUpload(
    doomedPort,
    "bafkdeadhalf0001",
    patternBytes(20 * MIB),
    9 * MIB,
  );
  await eventually(
    async () => (await uploadKeys(s3, "staging/")).length === 1,
    "the doomed instance's multipart upload",
    { timeoutMs: 20_000, intervalMs: 50 },
  );
  const [multipartKey] = await uploadKeys(s3, "staging/");
  const writer = multipartKey.split("/")[1];
  await putObject(s3, `staging/${writer}/${crypto.randomUUID()}`, patternBytes(1024, 1));
  await putObject(s3, "staging/from-an-older-build", patternBytes(1024, 2));
  doomed.process.kill("SIGKILL");
  assertEquals(await doomed.exited, 137);
  halfSent.close();

  await using survivor = await deployment.startInstance({
    postgresTimings: { heartbeatMs: 200, deadAfterMs: 2000 },
    jobIntervals: { "leftover-sweep": 200 },
  });
  const own = patternBytes(12 * MIB, 3);
  const inFlight = await startUpload(survivor.server.port, "bafkdeadsurvive1", own, 9 * MIB);
  try {
    const ofDoomed = (keys: string[]) => keys.filter((k) => k.startsWith(`staging/${writer}/`));
    await eventually(
      async () => {
        const uploads = await uploadKeys(s3, "staging/");
        const objects = await objectKeys(s3, "staging/");
        return uploads.length === 1 && ofDoomed([...uploads, ...objects]).length === 0;
      },
      "the dead instance's leftovers gone, the survivor's upload there",
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    // The survivor's own upload was left alone: it completes.
    await writeAll(inFlight, own.subarray(9 * MIB));
    const answer = await readResponse(inFlight);
    assertEquals(answer.status, 200, answer.body);
  } finally {
    inFlight.close();
  }
  const stored = await survivor.get("/p/bafkdeadsurvive1");
  assertEquals(new Uint8Array(await stored.arrayBuffer()), own);
  // A leftover whose writer is unknown is judged by age only (24 h).
  assertEquals(await objectKeys(s3, "staging/"), ["staging/from-an-older-build"]);
  assertOk((await uploadKeys(s3, "staging/")).length === 0, "no multipart upload left");
}
