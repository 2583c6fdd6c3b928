/**
 * Declared-codes scenarios (see scenario.ts) of public retrieval: GET and HEAD
 * /p/{cid}; /f/ and /piece/ are in files.ts, with the helpers here.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../../helpers/assert.ts";
import type { Probe } from "../openapi_probe.ts";
import { CID, removedPiece, request, wrongMethod } from "./scenario.ts";
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

/** What GET and HEAD /p/{cid} answer alike (a HEAD answer has no body, so no code). */
function pieceScenarios(method: "GET" | "HEAD"): Scenario[] {
  const answer = (status: string, code: string) => method === "GET" ? `${status} ${code}` : status;
  const ofStored = (name: string, headers: Record<string, string>, status: number) => ({
    name,
    send: async (p: Probe) => p.send(method, `/p/${await stored(p)}`, { headers }),
    status,
  });
  return [
    ofStored("a stored piece", {}, 200),
    ofStored("If-None-Match with its ETag", { "if-none-match": `"${CID}"` }, 304),
    // GET asks for a span, HEAD for a suffix: both forms are served.
    ofStored("one byte range", { range: method === "GET" ? "bytes=1-3" : "bytes=-3" }, 206),
    {
      ...ofStored("a range that starts past the end", { range: "bytes=99-" }, 416),
      code: method === "GET" ? "range_not_satisfiable" : undefined,
    },
    request("a malformed cid", `${method} /p/abc`, answer("400", "invalid_cid")),
    request(
      "a cid nothing is stored under",
      `${method} /p/bafkmissing0001`,
      answer("404", "not_found"),
    ),
    request("no storage bound", `${method} /p/bafkmissing0001`, answer("503", "storage_offline"), {
      args: ["--data-dir", ""],
    }),
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => p.send(method, `/p/${await corrupted(p)}`),
      status: 503,
      code: method === "GET" ? "piece_corrupt" : undefined,
    },
    {
      name: "a piece a sweep removed (no deal kept it)",
      send: async (p) => {
        await removedPiece(p);
        return p.send(method, `/p/${CID}`);
      },
      status: 410,
      code: method === "GET" ? "gone" : undefined,
    },
  ];
}

export const scenarios: Record<string, Scenario[]> = {
  getPiece: [
    ...pieceScenarios("GET"),
    {
      name: "a stored piece, again (from the small-piece cache)",
      send: async (p) => {
        assertEquals((await p.send("GET", `/p/${await stored(p)}`)).status, 200);
        return p.send("GET", `/p/${CID}`);
      },
      status: 200,
    },
    wrongMethod("POST", `/p/${CID}`),
  ],
  headPiece: pieceScenarios("HEAD"),
};

export const outOfReach: OutOfReach = {};
