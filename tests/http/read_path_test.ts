/**
 * The one read path of stored bytes, through the real server on the disk
 * store and on S3: a whole piece, ranges (one that starts and ends inside a
 * read block, ones across read blocks) from /p/ and /piece/, and /f/ across a
 * piece boundary all answer byte-exact; /f/ opens the next piece before the
 * one it sends ends (a bucket's first-byte wait hidden, not paid per piece);
 * and a client that goes away midway leaves no piece open, the one opened
 * ahead included (the test's resource sanitizer sees any file or socket left
 * behind). IPFS raw blocks, ranges of their CAR's piece, are checked byte by
 * byte on both stores by tests/ipfs/; the driver-level cases (a read
 * abandoned, a piece deleted while read) by tests/conformance/.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { eventually } from "../helpers/wait.ts";
import { withOverrides } from "../helpers/overrides.ts";
import { storeTests } from "../helpers/stores.ts";
import type { StoreServer } from "../helpers/stores.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import { pieceCid } from "../../src/client/sdk/mod.ts";
import type { PieceStore } from "../../src/driver/driver.ts";
import { READ_BYTES } from "../../src/driver/disk/file_range.ts";

const MIB = 1024 * 1024;
/** Several read blocks and a ragged end. */
const PIECE = seededBytes(3 * READ_BYTES + 12_345, 21);

/** What the wrapped store saw, in order: "open <cid>", "end <cid>" (its body closed), "cancel <cid>". */
function recordingStore(events: string[]) {
  return (store: PieceStore): PieceStore =>
    withOverrides(store, {
      open: async (key, range) => {
        events.push(`open ${key}`);
        const opened = await store.open(key, range);
        if (opened === null) return null;
        const body = opened.body.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            flush: () => void events.push(`end ${key}`),
            cancel: () => void events.push(`cancel ${key}`),
          }),
        );
        return { ...opened, body };
      },
    });
}

async function uploadPiece(server: StoreServer, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const { cid } = await pieceCid(bytes, { pool: null });
  const response = await server.upload(cid, bytes);
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
  return cid;
}

async function bytesOf(server: StoreServer, path: string, headers: Record<string, string> = {}) {
  const response = await server.get(path, { headers });
  return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
}

storeTests("read path: every way of asking for a piece's bytes is byte-exact", async (server) => {
  const cid = await uploadPiece(server, PIECE);
  assertEquals(await bytesOf(server, `/p/${cid}`), { status: 200, bytes: PIECE });
  const ranges: [number, number][] = [
    [READ_BYTES + 10, READ_BYTES + 4000], // starts and ends inside one read block
    [READ_BYTES - 3, 2 * READ_BYTES + 2], // crosses two block boundaries
    [0, 0],
    [PIECE.length - 1, PIECE.length - 1],
    [7, PIECE.length - 1],
  ];
  for (const [first, last] of ranges) {
    for (const route of ["p", "piece"]) {
      const got = await bytesOf(server, `/${route}/${cid}`, { range: `bytes=${first}-${last}` });
      assertEquals(got.status, 206, `/${route}/ ${first}-${last}`);
      assertEquals(got.bytes, PIECE.subarray(first, last + 1), `/${route}/ ${first}-${last}`);
    }
  }
});

/** Events of the recording store of the test that runs now (the stores' tests run in turn). */
const events: string[] = [];

/** `size` seeded bytes uploaded by the SDK in pieces of 1 MiB: the bytes and their pieces' cids. */
async function splitUpload(server: StoreServer, size: number, seed: number) {
  const file = seededBytes(size, seed);
  using client = new StorageClient({ server: server.url, hashWorkers: 0 });
  const split = await client.upload(file, { pieceSize: MIB, contentType: "video/webm" });
  return { file, cid: split.cid, pieces: split.pieces.map((piece) => piece.cid) };
}

storeTests(
  "read path: /f/ is byte-exact across piece boundaries and opens each next piece ahead",
  async (server) => {
    const { file, cid, pieces } = await splitUpload(server, 3 * MIB + 999, 22);
    assertEquals(pieces.length, 4);
    events.length = 0;
    assertEquals(await bytesOf(server, `/f/${cid}`), { status: 200, bytes: file });
    // Each next piece was opened before the one being sent had ended.
    for (let i = 1; i < pieces.length; i++) {
      const opened = events.indexOf(`open ${pieces[i]}`);
      const ended = events.indexOf(`end ${pieces[i - 1]}`);
      assertOk(opened >= 0 && ended >= 0, events.join(", "));
      assertOk(opened < ended, `piece ${i} opened after piece ${i - 1} ended: ${events}`);
    }
    // Starts inside the first piece's last read, ends inside the third's first.
    const part = await bytesOf(server, `/f/${cid}`, { range: `bytes=${MIB - 5}-${2 * MIB + 5}` });
    assertEquals(part, { status: 206, bytes: file.subarray(MIB - 5, 2 * MIB + 6) });
  },
  { wrapStore: recordingStore(events) },
);

storeTests(
  "read path: a client that goes away midway leaves no piece open, the next one's included",
  async (server) => {
    // More pieces than loopback's buffers hold: the client stops the server well before the end.
    const { cid, pieces } = await splitUpload(server, 32 * MIB, 24);
    const opened = () => events.filter((e) => e.startsWith("open ")).map((e) => e.slice(5));
    const settled = (cid: string) =>
      events.includes(`end ${cid}`) || events.includes(`cancel ${cid}`);
    // Going away at different points: while the server waits on the client, or on a piece.
    for (const stopAt of [2, 5, 9]) {
      events.length = 0;
      const response = await server.get(`/f/${cid}`);
      const reader = response.body!.getReader();
      while (!events.includes(`open ${pieces[stopAt]}`)) await reader.read();
      await reader.cancel();
      await eventually(
        () => events.some((e) => e.startsWith("cancel ")) && opened().every(settled),
        `every piece opened ended or was cancelled: ${events}`,
      );
      assertOk(opened().length < pieces.length, "the stream stopped opening pieces");
    }
    // A piece file or a bucket's answer left open here fails the test's resource sanitizer.
  },
  { wrapStore: recordingStore(events) },
);
