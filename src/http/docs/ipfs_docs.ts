/**
 * What /openapi.json says of the IPFS trustless gateway's route (http/ipfs/
 * serves it): the formats and scopes it answers, and the headers the
 * specification asks of each answer. Kept apart from the handler so its file
 * holds only what it does, and the API prose has one home, docs/.
 */
import { IF_NONE_MATCH_PARAMETER } from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";

/** What every gateway answer carries besides its body (ipfs.ts's gatewayHeaders). */
const GATEWAY_HEADERS: HeaderUse = {
  "Content-Type": "always",
  "Content-Disposition": "always",
  ETag: "always",
  "X-Content-Type-Options": "always",
  "X-Ipfs-Roots": "always",
  "X-Ipfs-Path": "always",
  Vary: "always",
  "Content-Location": "sometimes",
};

export const getIpfsDoc: RouteDoc = {
  operationId: "getIpfs",
  summary: "Trustless IPFS gateway: a block or a CAR of a DAG the service holds (public)",
  description: "As the IPFS trustless gateway specification says: " +
    "Accept: application/vnd.ipld.raw (or ?format=raw) answers the block itself; " +
    "Accept: application/vnd.ipld.car (or ?format=car) answers a CARv1 of the DAG under the " +
    "cid (dag-scope=block, entity or all, the default), depth first, each block once " +
    "(Content-Type application/vnd.ipld.car; version=1; order=dfs; dups=n). ?format wins " +
    "over Accept. Blocks are those of CAR uploads, and raw uploads under their sha2-256 cid. " +
    "A CAR answer walks at most --ipfs-max-walk-blocks blocks (more is 413 " +
    "too_many_blocks, counted before the answer starts), and one client address has at " +
    "most two CAR answers walking at once (429 rate_limited beyond).",
  auth: "public",
  parameters: [
    {
      name: "cid",
      in: "path",
      description: "A CIDv1 (base32 or base36) or a CIDv0 (Qm…); blocks match by multihash",
      schema: stringSchema,
    },
    {
      name: "format",
      in: "query",
      description: "raw or car; wins over Accept",
      schema: { ...stringSchema, enum: ["raw", "car"] },
    },
    {
      name: "dag-scope",
      in: "query",
      description: "For a CAR: block, entity or all (default all)",
      schema: { ...stringSchema, enum: ["block", "entity", "all"] },
    },
    IF_NONE_MATCH_PARAMETER,
  ],
  responses: [
    {
      status: 200,
      description: "The raw block, or a CAR stream (cut short if a block below the root is " +
        "not held: clients check a CAR for completeness)",
      body: { binary: true },
      headers: GATEWAY_HEADERS,
    },
    {
      status: 304,
      description: "Not modified: If-None-Match named this answer's ETag",
      headers: { ETag: "always", "X-Ipfs-Roots": "always" },
    },
  ],
  errors: [
    "invalid_cid",
    "invalid_request",
    "not_found",
    "not_acceptable",
    "too_many_blocks",
    "rate_limited",
  ],
};
