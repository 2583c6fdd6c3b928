/**
 * GET and HEAD /ipfs/{cid}: the IPFS trustless gateway (ipfs/specs,
 * http-gateways/trustless-gateway.md) over the blocks the service holds:
 * one raw block, or a CAR of the DAG under the cid (dag-scope block, entity
 * or all), depth first, each block once.
 *
 * The straight line: parse the cid (CIDv0 or CIDv1) → what is asked for
 * (ipfs_negotiation.ts) → locate the root block (404 when not held) →
 * conditional request (304) → headers → body. Answers are immutable, and
 * CAR answers are deterministic, so both carry strong ETags.
 *
 * A CAR answer is streamed as the DAG is walked: a block found missing below
 * the root cuts the stream short (the status was sent already), which the
 * specification asks clients to detect.
 *
 * A walk costs a lookup and a read per block, so it is bounded before the
 * status is sent: its blocks are counted first (dag_walk.ts countDagBlocks:
 * a read per node, raw leaves only counted), and a DAG of more than
 * `maxWalkBlocks` is 413 too_many_blocks (HEAD counts too, so it answers as
 * GET would); and a client address runs at most two walks at once (the count
 * and the answer's stream), 429 rate_limited beyond.
 */
import { CID } from "multiformats/cid";
import { base36 } from "multiformats/bases/base36";
import { ApiError } from "../../kernel/errors.ts";
import type { BlockSource, LocatedBlock } from "../../ipfs/blocks.ts";
import { carChunks } from "../../ipfs/car_write.ts";
import { countDagBlocks, walkDag } from "../../ipfs/dag_walk.ts";
import { ClientSlots } from "../../limits/client_slots.ts";
import { cutsAtContentLength } from "../../net/serve_connection.ts";
import { CAR_RESPONSE_TYPE, negotiate, RAW_BLOCK_TYPE } from "./negotiation.ts";
import type { GatewayAnswer } from "./negotiation.ts";
import { matchesEtag } from "../retrieval/conditional_answer.ts";
import { apiErrorOfStoreFailure } from "../../uploads/store_errors.ts";
import type { Handler } from "../pipeline/router.ts";

export const IPFS_PATH = "/ipfs/:cid";

/** Immutable for a year less a bit, as the path gateway specification asks. */
const IMMUTABLE = "public, max-age=29030400, immutable";

/** CAR answers one client address may have walking at once. */
export const WALKS_PER_CLIENT = 2;

export interface IpfsHandlerDeps {
  blocks: BlockSource;
  /** Most blocks one CAR answer walks (--ipfs-max-walk-blocks); more is 413 too_many_blocks. */
  maxWalkBlocks: number;
}

export function createIpfsHandler(deps: IpfsHandlerDeps): Handler {
  const walks = new ClientSlots(WALKS_PER_CLIENT);
  return async (request, context) => {
    const cid = parseCid(context.params.cid);
    const answer = negotiate(context.url, request.headers.get("accept"));
    const located = await deps.blocks.locate(cid).catch((error) => {
      throw apiErrorOfStoreFailure(error);
    });
    if (located === null) throw notHeld(cid);
    const headers = gatewayHeaders(cid, answer, context.url);
    if (matchesEtag(request.headers.get("if-none-match"), headers.get("etag")!)) {
      return new Response(null, { status: 304, headers });
    }
    if (answer.format === "raw") {
      headers.set("content-length", String(located.length));
      if (request.method === "HEAD") return new Response(null, { status: 200, headers });
      // Straight into the answer: where the server cuts it at its Content-Length, the body may
      // run on past the block (driver.ts OpenOptions).
      const answerWithLength = cutsAtContentLength(request);
      const body = await deps.blocks.open(located, { answerWithLength }).catch((error) => {
        throw apiErrorOfStoreFailure(error);
      });
      if (body === null) throw notHeld(cid);
      context.logFields.bytesOut = located.length;
      return new Response(body, { status: 200, headers });
    }
    const release = walks.take(context.clientKey);
    if (release === null) {
      throw new ApiError(
        "rate_limited",
        `At most ${WALKS_PER_CLIENT} CAR answers per client address walk at once; try again ` +
          "when one has ended",
        { headers: { "retry-after": "1" } },
      );
    }
    try {
      const root = { cid, located };
      const count = await countDagBlocks(deps.blocks, root, answer.scope, deps.maxWalkBlocks);
      if (count > deps.maxWalkBlocks) throw tooManyBlocks(cid, deps.maxWalkBlocks);
      if (request.method === "HEAD") {
        release();
        return new Response(null, { status: 200, headers });
      }
      const body = carBody(deps.blocks, root, answer.scope, release);
      return new Response(body, { status: 200, headers });
    } catch (error) {
      release();
      throw apiErrorOfStoreFailure(error);
    }
  };
}

/**
 * The CAR of the DAG under the root, as a stream that walks only as fast as
 * it is read; its walk slot is given back when it ends or is cancelled.
 */
function carBody(
  blocks: BlockSource,
  root: { cid: CID; located: LocatedBlock },
  scope: "block" | "entity" | "all",
  release: () => void,
): ReadableStream<Uint8Array> {
  async function* chunks() {
    try {
      yield* carChunks(blocks, [root.cid], walkDag(blocks, root, scope));
    } finally {
      release();
    }
  }
  return ReadableStream.from(chunks());
}

function tooManyBlocks(cid: CID, max: number): ApiError {
  return new ApiError(
    "too_many_blocks",
    `The DAG under ${cid} has more than ${max} blocks, more than one CAR answer walks ` +
      "(--ipfs-max-walk-blocks); ask for its parts (dag-scope=block, or the cids below it)",
  );
}

/** CIDv1 in base32 (b…) or base36 (k…), or CIDv0 (Qm…); 400 invalid_cid otherwise. */
function parseCid(text: string | undefined): CID {
  try {
    return text?.startsWith("k") ? CID.parse(text, base36) : CID.parse(text ?? "");
  } catch {
    throw new ApiError("invalid_cid", `${text} is not a cid (CIDv1 in base32 or base36, or CIDv0)`);
  }
}

function notHeld(cid: CID): ApiError {
  return new ApiError("not_found", `No block ${cid} is held here`);
}

function gatewayHeaders(cid: CID, answer: GatewayAnswer, url: URL): Headers {
  const text = cid.toString();
  const raw = answer.format === "raw";
  const headers = new Headers({
    "content-type": raw ? RAW_BLOCK_TYPE : CAR_RESPONSE_TYPE,
    "content-disposition": `attachment; filename="${text}.${raw ? "bin" : "car"}"`,
    "cache-control": IMMUTABLE,
    "etag": raw ? `"${text}.raw"` : `"${text}.car.${answer.scope}.dfs.n"`,
    "x-content-type-options": "nosniff",
    "x-ipfs-roots": text,
    "x-ipfs-path": `/ipfs/${text}`,
    "accept-ranges": "none",
    "vary": "Accept",
  });
  if (answer.pickedByAccept) {
    const location = new URLSearchParams(url.searchParams);
    location.set("format", answer.format);
    headers.set("content-location", `${url.pathname}?${location}`);
  }
  return headers;
}
