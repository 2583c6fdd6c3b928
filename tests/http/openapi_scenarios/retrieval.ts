/**
 * Declared-codes scenarios (see scenario.ts) of public retrieval: GET and HEAD
 * /p/{cid}; /f/ and /piece/ are in files.ts, with the helpers here.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../../helpers/assert.ts";
import type { Probe } from "../openapi_probe.ts";
import { CID, removedPiece, wrongMethod } from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** A stored piece and its cid, for retrieval scenarios. */
export async function stored(p: Probe): Promise<string> {
  const answer = await p.upload(CID, "stored bytes");
  assertEquals(answer.status, 200, answer.body);
  return CID;
}

/**
 * A stored piece marked corrupt, as `main.ts scrub` marks one whose bytes fail
 * verification (tests/ops/backup_scrub_test.ts flips a byte and runs the real one).
 */
export async function corrupted(p: Probe, cid?: string): Promise<string> {
  cid ??= await stored(p);
  const scrub = new DatabaseSync(`${p.server.dataDir}/storage.db`);
  try {
    scrub.prepare(
      "INSERT INTO corrupt_pieces (cid, marked_at, problem) VALUES (?, '2026-01-01T00:00:00Z', 'test')",
    ).run(cid);
  } finally {
    scrub.close();
  }
  return cid;
}

export const scenarios: Record<string, Scenario[]> = {
  getPiece: [
    {
      name: "a stored piece",
      send: async (p) => p.send("GET", `/p/${await stored(p)}`),
      status: 200,
    },
    {
      name: "a stored piece, again (from the small-piece cache)",
      send: async (p) => {
        assertEquals((await p.send("GET", `/p/${await stored(p)}`)).status, 200);
        return p.send("GET", `/p/${CID}`);
      },
      status: 200,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) =>
        p.send("GET", `/p/${await stored(p)}`, { headers: { "if-none-match": `"${CID}"` } }),
      status: 304,
    },
    {
      name: "one byte range",
      send: async (p) =>
        p.send("GET", `/p/${await stored(p)}`, { headers: { range: "bytes=1-3" } }),
      status: 206,
    },
    {
      name: "a range that starts past the end",
      send: async (p) =>
        p.send("GET", `/p/${await stored(p)}`, { headers: { range: "bytes=99-" } }),
      status: 416,
      code: "range_not_satisfiable",
    },
    {
      name: "a malformed cid",
      send: (p) => p.send("GET", "/p/abc"),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "a cid nothing is stored under",
      send: (p) => p.send("GET", "/p/bafkmissing0001"),
      status: 404,
      code: "not_found",
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.send("GET", "/p/bafkmissing0001"),
      status: 503,
      code: "storage_offline",
    },
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => p.send("GET", `/p/${await corrupted(p)}`),
      status: 503,
      code: "piece_corrupt",
    },
    {
      name: "a piece a sweep removed (no deal kept it)",
      send: async (p) => {
        await removedPiece(p);
        return p.send("GET", `/p/${CID}`);
      },
      status: 410,
      code: "gone",
    },
    wrongMethod("POST", `/p/${CID}`),
  ],
  headPiece: [
    {
      name: "a stored piece",
      send: async (p) => p.send("HEAD", `/p/${await stored(p)}`),
      status: 200,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) =>
        p.send("HEAD", `/p/${await stored(p)}`, { headers: { "if-none-match": `"${CID}"` } }),
      status: 304,
    },
    {
      name: "one byte range",
      send: async (p) =>
        p.send("HEAD", `/p/${await stored(p)}`, { headers: { range: "bytes=-3" } }),
      status: 206,
    },
    {
      name: "a range that starts past the end",
      send: async (p) =>
        p.send("HEAD", `/p/${await stored(p)}`, { headers: { range: "bytes=99-" } }),
      status: 416,
    },
    { name: "a malformed cid", send: (p) => p.send("HEAD", "/p/abc"), status: 400 },
    {
      name: "a cid nothing is stored under",
      send: (p) => p.send("HEAD", "/p/bafkmissing0001"),
      status: 404,
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.send("HEAD", "/p/bafkmissing0001"),
      status: 503,
    },
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => p.send("HEAD", `/p/${await corrupted(p)}`),
      status: 503,
    },
    {
      name: "a piece a sweep removed (no deal kept it)",
      send: async (p) => {
        await removedPiece(p);
        return p.send("HEAD", `/p/${CID}`);
      },
      status: 410,
    },
  ],
};

export const outOfReach: OutOfReach = {};
