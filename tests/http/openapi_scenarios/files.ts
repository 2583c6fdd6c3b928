/**
 * Declared-codes scenarios (see scenario.ts) of the two other retrieval
 * routes: a whole file (GET and HEAD /f/{cid}) and the piece gateway (GET and
 * HEAD /piece/{pieceCid}).
 */
import { assertEquals, assertOk } from "../../helpers/assert.ts";
import { pieceCid } from "../../../src/client/sdk/mod.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../../../src/kernel/manifest_format.ts";
import type { Probe } from "../openapi_probe.ts";
import { corrupted, stored } from "./retrieval.ts";
import { afterStoring, CID, request, wrongMethod } from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

const PIECE_BYTES = new TextEncoder().encode("the only piece");

/** A stored piece under its PieceCIDv2. */
async function storedPiece(p: Probe): Promise<string> {
  const { cid } = await pieceCid(PIECE_BYTES, { pool: null });
  const answer = await p.upload(cid, PIECE_BYTES);
  assertEquals(answer.status, 200, answer.body);
  return cid;
}

/** A split file of one piece: the piece, then its manifest under CID. */
async function splitFile(p: Probe): Promise<string> {
  const piece = await storedPiece(p);
  const manifest = serializeManifest({
    format: "storage-manifest",
    version: 1,
    name: "one.txt",
    contentType: "text/plain",
    size: PIECE_BYTES.length,
    sha256: "0".repeat(64),
    pieces: [{ cid: piece, size: PIECE_BYTES.length }],
  });
  const answer = await p.upload(CID, manifest, {
    headers: { "content-type": MANIFEST_CONTENT_TYPE },
  });
  assertEquals(answer.status, 200, answer.body);
  return CID;
}

/**
 * The subject, stored, then removed by the server's own sweep judged as at 60
 * days on: past every sponsored term (30 days) and the grace period (7).
 */
async function removed(p: Probe, subject: (p: Probe) => Promise<string>): Promise<string> {
  const cid = await subject(p);
  const report = await p.server.server.gc.sweep({ asOf: Date.now() + 60 * 86_400_000 });
  assertOk((report?.removedPieces ?? 0) > 0, "the sweep removed the subject");
  return cid;
}

/** Scenarios every route that serves bytes shares, for GET or HEAD (HEAD: no codes). */
function bytesScenarios(
  method: "GET" | "HEAD",
  route: string,
  subject: (p: Probe) => Promise<string>,
  invalid: string,
): Scenario[] {
  const code = (c: string) => method === "GET" ? c : undefined;
  const send = (p: Probe, path: string, headers: Record<string, string> = {}) =>
    p.send(method, path, { headers });
  return [
    {
      name: "a stored subject",
      send: async (p) => send(p, `${route}${await subject(p)}`),
      status: 200,
    },
    {
      name: "one byte range",
      send: async (p) => send(p, `${route}${await subject(p)}`, { range: "bytes=2-" }),
      status: 206,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) => {
        const path = `${route}${await subject(p)}`;
        const etag = (await p.send("HEAD", path)).headers.get("etag")!;
        return send(p, path, { "if-none-match": etag });
      },
      status: 304,
    },
    {
      name: "a range that starts past the end",
      send: async (p) => send(p, `${route}${await subject(p)}`, { range: "bytes=999-" }),
      status: 416,
      code: code("range_not_satisfiable"),
    },
    {
      name: "a cid it does not take",
      send: (p) => send(p, `${route}${invalid}`),
      status: 400,
      code: code("invalid_cid"),
    },
    {
      name: "nothing stored under the cid",
      send: async (p) =>
        send(p, `${route}${(await pieceCid(new Uint8Array(7), { pool: null })).cid}`),
      status: 404,
      code: code("not_found"),
    },
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => send(p, `${route}${await corrupted(p, await subject(p))}`),
      status: 503,
      code: code("piece_corrupt"),
    },
    {
      name: "a subject a sweep removed (no deal kept it)",
      send: async (p) => send(p, `${route}${await removed(p, subject)}`),
      status: 410,
      code: code("gone"),
    },
  ];
}

export const scenarios: Record<string, Scenario[]> = {
  getFile: [
    ...bytesScenarios("GET", "/f/", splitFile, "abc"),
    {
      name: "a piece that is no manifest",
      send: async (p) => p.send("GET", `/f/${await stored(p)}`),
      status: 200,
    },
    wrongMethod("POST", `/f/${CID}`),
  ],
  headFile: bytesScenarios("HEAD", "/f/", splitFile, "abc"),
  getGatewayPiece: [
    ...bytesScenarios("GET", "/piece/", storedPiece, CID),
    wrongMethod("POST", `/piece/${CID}`),
  ],
  headGatewayPiece: bytesScenarios("HEAD", "/piece/", storedPiece, CID),
  getPieceStatus: [
    afterStoring(
      "a stored piece",
      "stored bytes",
      (p) => p.send("GET", `/api/pieces/${CID}`),
      "200",
    ),
    request("a cid nothing is stored under", "GET /api/pieces/bafknothing01", "200"),
    request("not a cid", "GET /api/pieces/no", "400 invalid_cid"),
    wrongMethod("POST", `/api/pieces/${CID}`),
  ],
  headPieceStatus: [
    request("a cid", `HEAD /api/pieces/${CID}`, "200"),
    request("not a cid", "HEAD /api/pieces/no", "400"),
  ],
};

export const outOfReach: OutOfReach = {};
