/**
 * A download whose connection drops mid-body resumes where it broke off
 * (Range from the first byte not received, If-Range), in the SDK and so in
 * `storage download`, for a single piece and for each piece of a split file;
 * and gives up, as a NetworkError, when tries in a row bring nothing. The
 * drops are real: a TCP proxy (tests/helpers/cutting_proxy.ts) closes the
 * connection part-way through the answer.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { startCuttingProxy } from "../helpers/cutting_proxy.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { NetworkError, StorageClient } from "../../src/client/sdk/mod.ts";
import { withTempDir } from "../helpers/files.ts";

const FAST_RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 50 };
const CLI = new URL("../../src/client/cli/main.ts", import.meta.url).pathname;

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The ranges the server was asked for on /p/, as its log lines name them. */
function rangesAsked(server: TestServer): string[] {
  return server.logs
    .filter((line) => line.msg === "request" && line.route === "/p/:cid" && line.status === 206)
    .map((line) => String(line.range));
}

/** A server holding `bytes` (uploaded whole, or split in pieces of pieceSize), behind a cutting proxy. */
async function storedBehindCuts(
  bytes: Uint8Array<ArrayBuffer>,
  options: { pieceSize?: number; cutAfterBodyBytes: number; cuts: number },
) {
  const server = await startTestServer();
  try {
    using uploader = new StorageClient({ server: server.url, hashWorkers: 0 });
    const uploaded = await uploader.upload(bytes, { pieceSize: options.pieceSize });
    const proxy = startCuttingProxy({ port: server.server.port, ...options });
    return {
      server,
      proxy,
      uploaded,
      async [Symbol.asyncDispose]() {
        await proxy[Symbol.asyncDispose]();
        await server[Symbol.asyncDispose]();
      },
    };
  } catch (error) {
    await server[Symbol.asyncDispose]();
    throw error;
  }
}

Deno.test("download resume: a piece whose connection drops is fetched on from where it broke", async () => {
  const bytes = seededBytes(3 * MIB + 17, 1);
  await using fixture = await storedBehindCuts(bytes, { cutAfterBodyBytes: 700_000, cuts: 3 });
  const { server, proxy, uploaded: { cid } } = fixture;
  using client = new StorageClient({ server: proxy.url, retry: FAST_RETRY, hashWorkers: 0 });
  assertEquals(await readAll(await client.download(cid)), bytes);
  assertEquals(proxy.cutsMade, 3);
  const ranges = rangesAsked(server);
  assertEquals(ranges.length, 3, "one ranged GET per break");
  // Each resumes where the last one broke: after 700,000 bytes of body, less what the SDK held.
  for (const range of ranges) {
    const first = Number(range.split("-")[0]);
    assertOk(first > 0 && first <= 3 * 700_000, range);
    assertEquals(range.split("-")[1], String(bytes.length - 1));
  }
});

Deno.test("download resume: every piece of a split file resumes on its own", async () => {
  const bytes = seededBytes(3 * MIB + 5, 2);
  await using fixture = await storedBehindCuts(bytes, {
    pieceSize: MIB,
    cutAfterBodyBytes: 400_000,
    cuts: 6,
  });
  const { server, proxy, uploaded } = fixture;
  assertEquals(uploaded.pieces.length, 4);
  using client = new StorageClient({ server: proxy.url, retry: FAST_RETRY, hashWorkers: 0 });
  assertEquals(await readAll(await client.download(uploaded.cid)), bytes);
  assertEquals(proxy.cutsMade, 6);
  assertOk(rangesAsked(server).length >= 4, `ranges: ${rangesAsked(server)}`);
});

Deno.test("download resume: tries in a row that bring no byte end in a NetworkError", async () => {
  // Every answer is cut right after its head: no attempt brings a byte of body.
  await using fixture = await storedBehindCuts(seededBytes(MIB, 3), {
    cutAfterBodyBytes: 0,
    cuts: 1000,
  });
  const { proxy, uploaded: { cid } } = fixture;
  using client = new StorageClient({ server: proxy.url, retry: FAST_RETRY, hashWorkers: 0 });
  const error = await client.download(cid).then(readAll).then(() => null, (e) => e);
  assertOk(error instanceof NetworkError, `got ${error}`);
  // The first GET, then one ranged GET per try (3 attempts), each cut.
  assertEquals(proxy.cutsMade, 1 + FAST_RETRY.attempts);
});

Deno.test("download resume: `storage download` finishes a dropped download and verifies it", async () => {
  const bytes = seededBytes(2 * MIB + 9, 4);
  await using fixture = await storedBehindCuts(bytes, {
    pieceSize: MIB,
    cutAfterBodyBytes: 300_000,
    cuts: 2,
  });
  const { server, proxy, uploaded: { cid } } = fixture;
  await withTempDir("resume-cli-", async (dir) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CLI, "download", cid, "-o", `${dir}/file.bin`, "--json"],
      env: { NO_COLOR: "1", STORAGE_URL: proxy.url, STORAGE_TOKEN: "" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    assertEquals(JSON.parse(new TextDecoder().decode(output.stdout)).verified, true);
    assertEquals(await Deno.readFile(`${dir}/file.bin`), bytes);
    assertEquals(proxy.cutsMade, 2);
    assertEquals(rangesAsked(server).length, 2);
  });
});
