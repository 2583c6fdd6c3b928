/**
 * The trustless gateway's protocol, as the IPFS trustless gateway
 * specification states it: format negotiation (?format wins over Accept),
 * the CAR variants and dag-scope, the headers, 304, HEAD, the bafkqaaa probe,
 * and the 4xx for what is not served. Storage-independent: one data directory.
 */
import { CID } from "multiformats/cid";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import * as dagCbor from "@ipld/dag-cbor";
import { sha256 } from "multiformats/hashes/sha2";
import {
  blocksOf,
  carOf,
  packFiles,
  RAW_TYPE,
  rawBlock,
  readVerifiedCar,
} from "../helpers/ipfs.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { uploadCar } from "./ipfs_suite.ts";

const CAR_ANSWER = "application/vnd.ipld.car; version=1; order=dfs; dups=n";

async function withSite(
  fn: (server: TestServer, site: { root: string; file: string; leaves: string[] }) => Promise<void>,
) {
  await using server = await startTestServer();
  const { root, car } = await packFiles({
    "dir/file.bin": seededBytes(2 * 1024 * 1024 + 10, 3),
    "dir/other.bin": seededBytes(2 * 1024 * 1024 + 10, 3), // the same leaves again
    "hello.txt": new TextEncoder().encode("hello"),
  });
  assertEquals((await uploadCar(server, car)).response.status, 200);
  const blocks = await blocksOf(car);
  const leaves = blocks.filter((b) => b.cid.code === 0x55 && b.bytes.length === 1024 * 1024);
  const file = blocks.find((b) => b.cid.code === 0x70 && b.bytes.length < 400)!;
  await fn(server, {
    root,
    file: file.cid.toString(),
    leaves: leaves.map((b) => b.cid.toString()),
  });
}

async function car(server: TestServer, path: string, init?: RequestInit) {
  const answer = await server.get(path, init);
  assertEquals(answer.status, 200, path);
  assertEquals(answer.headers.get("content-type"), CAR_ANSWER);
  return { answer, read: await readVerifiedCar(new Uint8Array(await answer.arrayBuffer())) };
}

Deno.test("gateway: dag-scope block, entity and all, depth first, each block once", async () => {
  await withSite(async (server, site) => {
    const block = await car(server, `/ipfs/${site.root}?format=car&dag-scope=block`);
    assertEquals(block.read.blocks.map((b) => b.cid.toString()), [site.root]);
    // entity of a directory: the directory alone; of a file: the file and all its leaves.
    const dirEntity = await car(server, `/ipfs/${site.root}?format=car&dag-scope=entity`);
    assertEquals(dirEntity.read.blocks.length, 1);
    const fileEntity = await car(server, `/ipfs/${site.file}?format=car&dag-scope=entity`);
    assertEquals(fileEntity.read.blocks.map((b) => b.cid.toString()).slice(0, 1), [site.file]);
    assertEquals(fileEntity.read.blocks.length, 4); // the file node, 2 full leaves, 1 short one
    // all: both files share their leaves; dups=n sends each block once.
    const all = await car(server, `/ipfs/${site.root}?format=car`);
    const cids = all.read.blocks.map((b) => b.cid.toString());
    assertEquals(new Set(cids).size, cids.length);
    assertEquals(cids[0], site.root);
    assertOk(site.leaves.every((leaf) => cids.includes(leaf)));
    // Deterministic: the same bytes again, under a strong ETag that names the scope.
    const again = await server.get(`/ipfs/${site.root}?format=car`);
    assertEquals(all.answer.headers.get("etag"), `"${site.root}.car.all.dfs.n"`);
    assertEquals(again.headers.get("etag"), all.answer.headers.get("etag"));
    const first = await readVerifiedCar(new Uint8Array(await again.arrayBuffer()));
    assertEquals(first.blocks.map((b) => b.cid.toString()), cids);
  });
});

Deno.test("gateway: ?format wins over Accept, Accept picks with Content-Location, Vary: Accept", async () => {
  await withSite(async (server, site) => {
    const raw = await server.get(`/ipfs/${site.root}?format=raw`, {
      headers: { accept: "application/vnd.ipld.car" },
    });
    assertEquals(raw.headers.get("content-type"), RAW_TYPE);
    assertEquals(raw.headers.get("content-location"), null);
    await raw.body?.cancel();
    const byAccept = await car(server, `/ipfs/${site.root}?dag-scope=block`, {
      headers: { accept: "application/vnd.ipld.raw;q=0.5, application/vnd.ipld.car" },
    });
    assertEquals(
      byAccept.answer.headers.get("content-location"),
      `/ipfs/${site.root}?dag-scope=block&format=car`,
    );
    const headers = byAccept.answer.headers;
    assertEquals(headers.get("vary"), "Accept");
    assertEquals(headers.get("cache-control"), "public, max-age=29030400, immutable");
    assertEquals(headers.get("content-disposition"), `attachment; filename="${site.root}.car"`);
    assertEquals(headers.get("x-ipfs-roots"), site.root);
    assertEquals(headers.get("x-content-type-options"), "nosniff");
  });
});

Deno.test("gateway: raw answers carry the spec's headers; HEAD and If-None-Match answer without a body", async () => {
  await withSite(async (server, site) => {
    const leaf = site.leaves[0];
    const head = await server.get(`/ipfs/${leaf}?format=raw`, { method: "HEAD" });
    assertEquals(head.status, 200);
    assertEquals(head.headers.get("content-length"), String(1024 * 1024));
    assertEquals(head.headers.get("etag"), `"${leaf}.raw"`);
    assertEquals(head.headers.get("content-disposition"), `attachment; filename="${leaf}.bin"`);
    assertEquals(await head.text(), "");
    const cached = await server.get(`/ipfs/${leaf}?format=raw`, {
      headers: { "if-none-match": `"${leaf}.raw"` },
    });
    assertEquals(cached.status, 304);
    assertEquals(await cached.text(), "");
  });
});

Deno.test("gateway: the bafkqaaa probe answers an empty block and an empty CAR rooted at it", async () => {
  await using server = await startTestServer();
  const raw = await server.get("/ipfs/bafkqaaa?format=raw");
  assertEquals(raw.status, 200);
  assertEquals((await raw.arrayBuffer()).byteLength, 0);
  const { read } = await car(server, "/ipfs/bafkqaaa?format=car");
  assertEquals(read.roots, ["bafkqaaa"]);
  assertEquals(read.blocks, []);
});

Deno.test("gateway: what is not held or not served is a clear 4xx", async () => {
  await using server = await startTestServer();
  const missing = CID.parse("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy");
  const cases: [string, RequestInit, number, string][] = [
    [`/ipfs/${missing}?format=raw`, {}, 404, "not_found"],
    [`/ipfs/${missing}?format=car`, { method: "HEAD" }, 404, ""],
    [`/ipfs/not-a-cid?format=raw`, {}, 400, "invalid_cid"],
    [`/ipfs/${missing}`, {}, 400, "invalid_request"], // no Accept: strict trustless mode
    [`/ipfs/${missing}`, { headers: { accept: "text/html" } }, 406, "not_acceptable"],
    [`/ipfs/${missing}?format=tar`, {}, 400, "invalid_request"],
    [`/ipfs/bafkqaaa?format=car&car-dups=y`, {}, 406, "not_acceptable"],
    [
      `/ipfs/bafkqaaa`,
      { headers: { accept: "application/vnd.ipld.car; version=2" } },
      406,
      "not_acceptable",
    ],
    [`/ipfs/bafkqaaa?format=car&dag-scope=some`, {}, 400, "invalid_request"],
    [`/ipfs/bafkqaaa?format=car&entity-bytes=0:10`, {}, 400, "invalid_request"],
  ];
  for (const [path, init, status, code] of cases) {
    const answer = await server.get(path, init);
    assertEquals(answer.status, status, path);
    if (code) assertEquals((await errorOf(answer)).error, code, path);
    else await answer.body?.cancel();
  }
});

Deno.test("gateway: a CAR whose DAG lacks a block below the root is cut short after 200, never completed", async () => {
  await using server = await startTestServer();
  const missing = await rawBlock(new TextEncoder().encode("never uploaded"));
  const rootBytes = dagCbor.encode({ name: "parent", child: missing.cid });
  const root = {
    cid: CID.createV1(dagCbor.code, await sha256.digest(rootBytes)),
    bytes: rootBytes,
  };
  assertEquals((await uploadCar(server, await carOf([root.cid], [root]))).response.status, 200);
  // The root alone is there: block scope is whole.
  const block = await car(server, `/ipfs/${root.cid}?format=car&dag-scope=block`);
  assertEquals(block.read.blocks.map((b) => b.cid.toString()), [root.cid.toString()]);
  const all = await server.get(`/ipfs/${root.cid}?format=car`);
  assertEquals(all.status, 200);
  const body = await all.arrayBuffer().then((b) => new Uint8Array(b), () => null);
  if (body !== null) {
    // Whatever arrived is not the whole DAG: the missing block is not in it.
    const read = await readVerifiedCar(body);
    assertOk(!read.blocks.some((b) => b.cid.equals(missing.cid)));
  }
  assertEquals(server.logs.filter((l) => l.msg === "unhandled error"), []);
});
