/**
 * Retrieval looks a piece up in the catalog once per request: /f/ of a piece
 * that is not a manifest hands the row it found to /p/'s answer, and
 * /piece/ by a PieceCIDv2 keeps the row it found while choosing between the
 * v2 and the v1. Counted against a catalog and a store held in memory, with
 * the small-piece cache off (a cache fill re-reads the row on purpose, to
 * see a mark that raced the read).
 */
import { assertEquals } from "../helpers/assert.ts";
import { createRetrieval, SmallPieceCache } from "../../src/http/retrieval/mod.ts";
import type { RetrievalDeps } from "../../src/http/retrieval/mod.ts";
import type { RequestContext } from "../../src/http/pipeline/context.ts";
import type { PieceRecord } from "../../src/domain/catalog_records.ts";
import type { PieceCatalog } from "../../src/catalog/catalog.ts";
import type { PieceStore } from "../../src/driver/driver.ts";
import { silentLogger } from "../../src/kernel/log.ts";
import { pieceCidOfStream } from "../../src/kernel/piece_cid/mod.ts";

const BYTES = new TextEncoder().encode("hello, one lookup");

function record(cid: string, contentType = "text/plain"): PieceRecord {
  return {
    cid,
    size: BYTES.length,
    sha256: null,
    contentType,
    filename: null,
    createdAt: "2025-01-01T00:00:00.000Z",
    corruptAt: null,
    removedAt: null,
    pieceCidV2: null,
  };
}

/** Deps over one stored piece, counting the catalog's lookups. */
function depsOver(piece: PieceRecord): { deps: RetrievalDeps; lookups: string[] } {
  const lookups: string[] = [];
  const catalog = {
    getPiece: (cid: string) => {
      lookups.push(cid);
      return Promise.resolve(cid === piece.cid ? piece : null);
    },
  } as unknown as PieceCatalog;
  const store = {
    source: "stage",
    stat: (cid: string) => Promise.resolve(cid === piece.cid ? { size: BYTES.length } : null),
    open: (cid: string) =>
      Promise.resolve(
        cid === piece.cid ? { size: BYTES.length, body: new Response(BYTES).body! } : null,
      ),
  } as unknown as PieceStore;
  const deps: RetrievalDeps = {
    store,
    catalog,
    logger: silentLogger,
    cache: new SmallPieceCache({ maxPieceBytes: 0, maxTotalBytes: 0 }),
    reachability: { reachable: true },
    offload: null,
  };
  return { deps, lookups };
}

function contextOf(params: Record<string, string>): RequestContext {
  return { params, logFields: {} } as unknown as RequestContext;
}

Deno.test("retrieval: /f/ of a piece that is not a manifest looks it up once", async () => {
  const cid = "bafkreiplainpiece";
  const { deps, lookups } = depsOver(record(cid));
  const files = createRetrieval(deps).files;
  const response = await files(new Request(`http://x/f/${cid}`), contextOf({ cid }));
  assertEquals(response.status, 200);
  assertEquals(new Uint8Array(await response.arrayBuffer()), BYTES);
  assertEquals(lookups, [cid]);
});

Deno.test("retrieval: /piece/ by a PieceCIDv2 looks the piece up once", async () => {
  const { cid } = await pieceCidOfStream(new Response(BYTES).body!);
  const { deps, lookups } = depsOver(record(cid, "application/octet-stream"));
  const gateway = createRetrieval(deps).pieceGateway;
  const response = await gateway(
    new Request(`http://x/piece/${cid}`),
    contextOf({ pieceCid: cid }),
  );
  assertEquals(response.status, 200);
  assertEquals(new Uint8Array(await response.arrayBuffer()), BYTES);
  assertEquals(lookups, [cid]);
});
