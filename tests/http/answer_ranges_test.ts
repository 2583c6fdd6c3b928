/**
 * A range of a piece on disk goes out the way a whole piece does: by the read
 * loop, a few answers at once, and beyond those by the runtime's own file
 * stream from the range's offset, which Deno's HTTP server sends without a
 * JavaScript step or a fresh buffer per chunk and cuts at the answer's
 * Content-Length (driver.ts OpenOptions, bench workload 22). What that leans
 * on is pinned here: the disk driver bounds the loop's answers and gives the
 * runtime's stream only when asked (a range read by JavaScript stays exact), and the server sends
 * exactly the range and carries on, on one HTTP/1.1 connection (the next
 * answer's head follows the range's last byte); HTTP/2 does not cut, so a
 * request without a Host header (HTTP/2's clients send none) gets an exact
 * stream: ranges over HTTP/2 (TLS) are byte-exact too (serve_connection.ts
 * cutsAtContentLength).
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { writeAll } from "../helpers/raw_http.ts";
import { makePair, pairFiles } from "../helpers/tls_pair.ts";
import { DiskStore, LOOP_READERS } from "../../src/driver/disk/disk_store.ts";
import { READ_BYTES } from "../../src/driver/disk/file_range.ts";
import { sentFromResource } from "../../src/net/serve_connection.ts";
import type { PieceStore } from "../../src/driver/driver.ts";

const PIECE = seededBytes(3 * READ_BYTES + 12_345, 41);
const CID = "bafkanswerranges1";
/** [first, last] byte of each range asked for. */
const RANGES: [number, number][] = [
  [READ_BYTES + 10, READ_BYTES + 4000], // starts and ends inside one read
  [1000, PIECE.length - 2000], // most of the piece, bounded at both ends
  [0, 0],
  [PIECE.length - 3, PIECE.length - 1],
];

async function stored(server: TestServer): Promise<void> {
  const response = await server.upload(CID, PIECE);
  assertEquals(response.status, 200, await response.text());
}

Deno.test("answer ranges: the disk driver sends its first answers at once by the read loop, the rest by the runtime's stream, an exact stream to JavaScript", async () => {
  const dir = await Deno.makeTempDir({ prefix: "answer-ranges-" });
  try {
    const store = await DiskStore.create({ root: `${dir}/pieces` });
    const staged = await store.stage(ReadableStream.from([PIECE]), { expectedBytes: PIECE.length });
    await staged.commit(CID);
    const range = { offset: 1000, length: 5000 };
    // LOOP_READERS answers at once by the loop (whole pieces and cut ranges alike), then the
    // runtime's own stream: the loop's buffers stay bounded however many download at once.
    const answers = [];
    for (let i = 0; i < LOOP_READERS; i++) {
      const answer = await store.open(CID, i % 2 ? range : undefined, { answerWithLength: true });
      assertEquals(sentFromResource(answer!.body), false, `answer ${i} by the loop`);
      answers.push(answer!);
    }
    const native = await store.open(CID, range, { answerWithLength: true });
    assertEquals(sentFromResource(native!.body), true, "one more: sent from its resource");
    await native!.body.cancel();
    // A loop answer read to its end is exactly its bytes, and frees its place; so does a cancel.
    const whole = new Uint8Array(await new Response(answers[0].body).arrayBuffer());
    assertEquals(whole, PIECE, "a whole piece by the loop: exactly its bytes");
    const cut = new Uint8Array(await new Response(answers[1].body).arrayBuffer());
    assertEquals(cut, PIECE.subarray(1000, 6000), "a range by the loop: exactly its bytes");
    await answers[2].body.cancel();
    const freed = [];
    for (let i = 0; i < 3; i++) freed.push(await store.open(CID, undefined));
    assertEquals(freed.map((f) => sentFromResource(f!.body)), [false, false, false]);
    const full = await store.open(CID, undefined);
    assertEquals(sentFromResource(full!.body), true, "the loop is full again");
    for (const body of [full!.body, answers[3].body, ...freed.map((f) => f!.body)]) {
      await body.cancel();
    }
    // A range read by JavaScript is always the exact loop.
    const read = await store.open(CID, range);
    assertEquals(sentFromResource(read!.body), false);
    const bytes = new Uint8Array(await new Response(read!.body).arrayBuffer());
    assertEquals(bytes, PIECE.subarray(1000, 6000), "read by JavaScript: exactly the range");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Reads HTTP/1.1 answers off one connection, each exactly: its head, then Content-Length bytes. */
class AnswerReader {
  #pending = new Uint8Array(0);
  constructor(readonly conn: Deno.Conn) {}

  async #more(): Promise<void> {
    const buffer = new Uint8Array(256 * 1024);
    const n = await this.conn.read(buffer);
    if (n === null) throw new Error("the server closed the connection");
    const joined = new Uint8Array(this.#pending.length + n);
    joined.set(this.#pending);
    joined.set(buffer.subarray(0, n), this.#pending.length);
    this.#pending = joined;
  }

  async next(): Promise<{ status: number; headers: Map<string, string>; body: Uint8Array }> {
    let end: number;
    while ((end = new TextDecoder().decode(this.#pending).indexOf("\r\n\r\n")) === -1) {
      await this.#more();
    }
    // The head is ASCII: its characters are its bytes.
    const [statusLine, ...lines] = new TextDecoder().decode(this.#pending.subarray(0, end))
      .split("\r\n");
    const match = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine);
    assertOk(match, `a status line, not ${JSON.stringify(statusLine.slice(0, 40))}`);
    const headers = new Map(lines.map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }));
    const length = Number(headers.get("content-length"));
    const start = end + 4;
    while (this.#pending.length < start + length) await this.#more();
    const body = this.#pending.slice(start, start + length);
    this.#pending = this.#pending.slice(start + length);
    return { status: Number(match[1]), headers, body };
  }
}

Deno.test("answer ranges: over one HTTP/1.1 connection, each range is exactly its bytes and the next answer follows, by the loop and by the runtime's stream", async () => {
  let store: PieceStore | null = null;
  await using server = await startTestServer({ wrapStore: (s) => (store = s) });
  await stored(server);
  // Once as the loop sends them, once with the loop's places held: by the runtime's stream,
  // which only the server's cut at Content-Length ends.
  await answersOnOneConnection(server);
  const held = [];
  for (let i = 0; i < LOOP_READERS; i++) held.push(await store!.open(CID));
  const native = await store!.open(CID, { offset: 1, length: 1 }, { answerWithLength: true });
  assertEquals(sentFromResource(native!.body), true, "the loop's places are held");
  await native!.body.cancel();
  try {
    await answersOnOneConnection(server);
  } finally {
    for (const piece of held) await piece!.body.cancel();
  }
});

async function answersOnOneConnection(server: TestServer): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  try {
    const reader = new AnswerReader(conn);
    const ask = (path: string, range?: [number, number]) =>
      writeAll(
        conn,
        new TextEncoder().encode(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
            (range ? `Range: bytes=${range[0]}-${range[1]}\r\n` : "") + "\r\n",
        ),
      );
    for (const [first, last] of RANGES) {
      await ask(`/p/${CID}`, [first, last]);
      const answer = await reader.next();
      assertEquals(answer.status, 206, `${first}-${last}`);
      assertEquals(answer.body, PIECE.subarray(first, last + 1), `${first}-${last}`);
    }
    await ask(`/p/${CID}`);
    const whole = await reader.next();
    assertEquals([whole.status, whole.body], [200, PIECE]);
    // The connection is still good after the last range: a small answer comes through whole.
    await ask("/healthz");
    assertEquals((await reader.next()).status, 200);
  } finally {
    conn.close();
  }
}

Deno.test("answer ranges: over HTTP/2 (TLS), ranges at once on one connection are each exactly their bytes", async () => {
  const pair = await makePair(0x34);
  await using files = await pairFiles(pair);
  await using server = await startTestServer({ args: files.args });
  using client = Deno.createHttpClient({ caCerts: [pair.cert], http1: false, http2: true });
  const uploaded = await fetch(`${server.url}/api/upload?cid=${CID}`, {
    client,
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: PIECE,
  });
  assertEquals(uploaded.status, 200, await uploaded.text());
  // At once: the answers share the connection's streams.
  const got = await Promise.all(RANGES.map(async ([first, last]) => {
    const response = await fetch(`${server.url}/p/${CID}`, {
      client,
      headers: { range: `bytes=${first}-${last}` },
    });
    return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
  }));
  RANGES.forEach(([first, last], i) => {
    assertEquals(got[i].status, 206, `${first}-${last}`);
    assertEquals(got[i].bytes, PIECE.subarray(first, last + 1), `${first}-${last}`);
  });
});

Deno.test("answer ranges: under pressure (metered), a range is still exactly its bytes", async () => {
  // One connection is half of what a client may hold: the answer goes through the send meter,
  // which stops the file's stream at the answer's length.
  await using server = await startTestServer({ args: ["--max-connections-per-client", "2"] });
  await stored(server);
  for (const [first, last] of RANGES) {
    const response = await server.get(`/p/${CID}`, {
      headers: { range: `bytes=${first}-${last}` },
    });
    assertEquals(response.status, 206);
    const bytes = new Uint8Array(await response.arrayBuffer());
    assertEquals(bytes, PIECE.subarray(first, last + 1), `${first}-${last}`);
  }
});
