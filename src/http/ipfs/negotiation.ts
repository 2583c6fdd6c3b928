/**
 * Which answer a request to the trustless gateway asks for: one raw block
 * (`application/vnd.ipld.raw`, `?format=raw`) or a CAR (`application/vnd.ipld.car`,
 * `?format=car`) with its scope and variant. `?format` wins over Accept, and
 * the `car-*` query parameters over Accept's parameters, as the trustless
 * gateway specification says. The CAR variant served is version 1, `order=dfs`
 * and `dups=n`; asking for another is 406.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { DagScope } from "../../ipfs/dag_walk.ts";

export const RAW_BLOCK_TYPE = "application/vnd.ipld.raw";
export const CAR_TYPE = "application/vnd.ipld.car";
/** The one CAR variant the gateway writes, as its Content-Type says it. */
export const CAR_RESPONSE_TYPE = `${CAR_TYPE}; version=1; order=dfs; dups=n`;

export type GatewayAnswer =
  | { format: "raw"; pickedByAccept: boolean }
  | { format: "car"; pickedByAccept: boolean; scope: DagScope };

const SCOPES: readonly DagScope[] = ["block", "entity", "all"];

/** What the request asks for; throws 400 / 406 for what the gateway does not serve. */
export function negotiate(url: URL, accept: string | null): GatewayAnswer {
  const query = url.searchParams;
  const format = query.get("format");
  let picked: { format: "raw" | "car"; params: Map<string, string> };
  if (format === "raw" || format === "car") {
    picked = { format, params: new Map() };
  } else if (format !== null) {
    throw new ApiError(
      "invalid_request",
      `format=${format} is not served here: ask for format=raw (one block) or format=car`,
    );
  } else {
    picked = fromAccept(accept);
  }
  const pickedByAccept = format === null;
  if (picked.format === "raw") return { format: "raw", pickedByAccept };
  const variant = (name: string) => query.get(`car-${name}`) ?? picked.params.get(name);
  const version = variant("version");
  const order = variant("order");
  const dups = variant("dups");
  if (
    (version !== undefined && version !== null && version !== "1") ||
    (order !== undefined && order !== null && order !== "dfs" && order !== "unk") ||
    (dups !== undefined && dups !== null && dups !== "n")
  ) {
    throw new ApiError(
      "not_acceptable",
      "The CAR answers written here are version=1, order=dfs, dups=n",
    );
  }
  if (query.has("entity-bytes")) {
    throw new ApiError("invalid_request", "entity-bytes is not supported here: ask for the entity");
  }
  const scope = query.get("dag-scope") ?? "all";
  if (!SCOPES.includes(scope as DagScope)) {
    throw new ApiError("invalid_request", `dag-scope must be block, entity or all, not ${scope}`);
  }
  return { format: "car", pickedByAccept, scope: scope as DagScope };
}

/** The most preferred of raw and CAR in Accept (RFC 9110 §12.5.1), with its parameters. */
function fromAccept(accept: string | null): { format: "raw" | "car"; params: Map<string, string> } {
  // curl and fetch send */* when told nothing: that asks for no format either.
  if (accept === null || accept.trim() === "" || accept.trim() === "*/*") {
    throw new ApiError(
      "invalid_request",
      `This is a trustless gateway: send Accept: ${RAW_BLOCK_TYPE} or ${CAR_TYPE}, or ?format=`,
    );
  }
  let best: { format: "raw" | "car"; params: Map<string, string>; q: number } | null = null;
  for (const range of accept.split(",")) {
    const [type, ...rest] = range.split(";").map((part) => part.trim());
    const params = new Map<string, string>();
    for (const param of rest) {
      const at = param.indexOf("=");
      if (at > 0) params.set(param.slice(0, at).trim().toLowerCase(), param.slice(at + 1).trim());
    }
    const q = Number(params.get("q") ?? "1");
    const mediaType = type.toLowerCase();
    const format = mediaType === RAW_BLOCK_TYPE ? "raw" : mediaType === CAR_TYPE ? "car" : null;
    if (format === null || !(q > 0)) continue;
    if (best === null || q > best.q) best = { format, params, q };
  }
  if (best === null) {
    throw new ApiError(
      "not_acceptable",
      `This trustless gateway answers ${RAW_BLOCK_TYPE} or ${CAR_TYPE} only`,
    );
  }
  return best;
}
