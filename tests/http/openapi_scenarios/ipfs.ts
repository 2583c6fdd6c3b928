/** Declared-codes scenarios (see scenario.ts) of the trustless gateway: GET and HEAD /ipfs/{cid}. */
import { assertEquals } from "../../helpers/assert.ts";
import { CAR_TYPE, linkedCar, rawBlock } from "../../helpers/ipfs.ts";
import type { Probe } from "../openapi_probe.ts";
import { wrongMethod } from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** A raw upload under its sha2-256 cid: a block the gateway holds. */
async function held(p: Probe): Promise<string> {
  const block = await rawBlock(new TextEncoder().encode("a block of bytes"));
  const cid = block.cid.toString();
  const answer = await p.upload(cid, block.bytes as Uint8Array<ArrayBuffer>);
  assertEquals(answer.status, 200, answer.body);
  return cid;
}

const MISSING = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const RAW = { accept: "application/vnd.ipld.raw" };

function scenariosOf(method: "GET" | "HEAD"): Scenario[] {
  const code = (c: string) => method === "GET" ? c : undefined;
  return [
    {
      name: "a raw block by Accept",
      send: async (p) => p.send(method, `/ipfs/${await held(p)}`, { headers: RAW }),
      status: 200,
    },
    {
      name: "a CAR of a block by ?format",
      send: async (p) => p.send(method, `/ipfs/${await held(p)}?format=car`),
      status: 200,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) => {
        const cid = await held(p);
        return p.send(method, `/ipfs/${cid}?format=raw`, {
          headers: { "if-none-match": `"${cid}.raw"` },
        });
      },
      status: 304,
    },
    {
      name: "not a cid",
      send: (p) => p.send(method, "/ipfs/notacid?format=raw"),
      status: 400,
      code: code("invalid_cid"),
    },
    {
      name: "no Accept and no ?format",
      send: (p) => p.send(method, `/ipfs/${MISSING}`),
      status: 400,
      code: code("invalid_request"),
    },
    {
      name: "a block not held",
      send: (p) => p.send(method, `/ipfs/${MISSING}`, { headers: RAW }),
      status: 404,
      code: code("not_found"),
    },
    {
      name: "a CAR of a DAG of more blocks than --ipfs-max-walk-blocks",
      args: ["--ipfs-max-walk-blocks", "2"],
      send: async (p) => {
        const { root, car } = await linkedCar(2);
        const stored = await p.upload("bafkwalkscenario", car, {
          headers: { "content-type": CAR_TYPE },
        });
        assertEquals(stored.status, 200, stored.body);
        return p.send(method, `/ipfs/${root}?format=car`);
      },
      status: 413,
      code: code("too_many_blocks"),
    },
    {
      name: "an Accept of other types only",
      send: (p) => p.send(method, `/ipfs/${MISSING}`, { headers: { accept: "text/html" } }),
      status: 406,
      code: code("not_acceptable"),
    },
  ];
}

export const scenarios: Record<string, Scenario[]> = {
  getIpfs: [...scenariosOf("GET"), wrongMethod("POST", `/ipfs/${MISSING}`)],
  headIpfs: scenariosOf("HEAD"),
};

const TWO_WALKS = "needs two CAR answers of one address held open unread; provoked by " +
  "tests/ipfs/block_bounds_test.ts";

export const outOfReach: OutOfReach = {
  getIpfs: { "429 rate_limited": TWO_WALKS },
  headIpfs: { "429 rate_limited": TWO_WALKS },
};
