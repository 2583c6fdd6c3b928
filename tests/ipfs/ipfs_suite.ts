/**
 * CAR uploads and the trustless gateway on one deployment, with the
 * ecosystem's own clients: ipfs-car packs a directory (a file of many 1 MiB
 * blocks), the CAR is uploaded, and @helia/verified-fetch, with this service
 * as its only gateway, fetches and verifies a file by its path, in a process
 * that may connect nowhere but 127.0.0.1:<port> (its permission audit log is
 * read to prove it). A CAR sent through the tus endpoint is checked and
 * indexed the same, over PATCHes that cut its blocks. Run on disk + SQLite
 * (ipfs_disk_test.ts) and on S3 + PostgreSQL (ipfs_s3_postgres_test.ts).
 */
import { CID } from "multiformats/cid";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import {
  blocksOf,
  CAR_TYPE,
  carOf,
  carV2Of,
  cidWithHash,
  packDirectoryWithCli,
  packFiles,
  rawBlock,
  readVerifiedCar,
} from "../helpers/ipfs.ts";
import { errorOf } from "../helpers/server.ts";
import { tusCreate, tusCreated, tusHead, tusPatch } from "../helpers/tus_requests.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCid } from "../../src/client/sdk/piece_cid.ts";

export interface IpfsDeployment {
  name: string;
  ignore?: boolean;
  /** A server on this deployment; `sponsoredCap` sets --sponsored-daily-cap (bytes). */
  start(options?: { sponsoredCap?: number }): Promise<TestServer>;
  /** Files or objects the store is staging (what a refused upload must not leave). */
  staged(server: TestServer): Promise<string[]>;
}

const FILE = seededBytes(3 * 1024 * 1024 + 12_345, 28); // 4 leaves of ipfs-car's 1 MiB chunks

const SITE = {
  "dir/file.bin": FILE,
  "dir/small.txt": new TextEncoder().encode("small\n"),
  "hello.txt": new TextEncoder().encode("hello world"),
};

/** The site packed by ipfs-car's library (the same bytes its command line writes). */
async function site() {
  return await packFiles(SITE);
}

/** Uploads a CAR under its PieceCIDv2 (checked on the way in, like any verifiable cid). */
export async function uploadCar(server: TestServer, car: Uint8Array<ArrayBuffer>) {
  const { cid } = await pieceCid(car);
  return { cid, response: await server.upload(cid, car, { contentType: CAR_TYPE }) };
}

/**
 * @helia/verified-fetch (tests/fixtures/ipfs/verified_fetch_client.ts) fetching `url` with the
 * server as its only gateway, in a process allowed to connect to the server's address only:
 * its result, and every host it tried to reach (from Deno's permission audit log).
 */
export async function verifiedFetch(serverUrl: string, url: string) {
  const audit = await Deno.makeTempFile({ suffix: ".jsonl" });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-env",
        "--allow-read",
        "--allow-ffi",
        `--allow-net=${new URL(serverUrl).host}`,
        new URL("../fixtures/ipfs/verified_fetch_client.ts", import.meta.url).pathname,
        serverUrl,
        url,
      ],
      env: { DENO_AUDIT_PERMISSIONS: audit, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
    const contacted = new Set<string>();
    for (const line of (await Deno.readTextFile(audit)).split("\n").filter(Boolean)) {
      const entry = JSON.parse(line);
      if (entry.permission !== "net") continue;
      contacted.add(new URL(`http://${String(entry.value).replace(/^https?:\/\//, "")}`).host);
    }
    return {
      result: JSON.parse(lines.at(-1) || "{}"),
      contacted: [...contacted],
      stderr: new TextDecoder().decode(output.stderr),
    };
  } finally {
    await Deno.remove(audit);
  }
}

export function ipfsSuite(deployment: IpfsDeployment): void {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `ipfs (${deployment.name}): ${name}`, ignore: deployment.ignore, fn });

  test("verified-fetch reads ipfs://<root>/dir/file.bin of an ipfs-car CAR, talking to 127.0.0.1 only", async () => {
    await using server = await deployment.start();
    const { root, car } = await packDirectoryWithCli(SITE);
    assertEquals(root, (await site()).root, "the command line and the library agree");
    const { response } = await uploadCar(server, car);
    assertEquals(response.status, 200, await response.clone().text());
    assertEquals((await response.json()).roots, [root]);
    const fetched = await verifiedFetch(server.url, `ipfs://${root}/dir/file.bin`);
    const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", FILE)).toHex();
    assertEquals(fetched.result, {
      status: 200,
      bytes: FILE.length,
      sha256: expected,
      contentType: "application/octet-stream",
    }, fetched.stderr);
    assertEquals(fetched.contacted, [new URL(server.url).host]);
  });

  test("every block of the CAR is served raw, by CIDv1 and (dag-pb) by CIDv0", async () => {
    await using server = await deployment.start();
    const { root, car } = await site();
    assertEquals((await uploadCar(server, car)).response.status, 200);
    const blocks = await blocksOf(car);
    assertEquals(blocks.length, 9);
    for (const block of blocks) {
      const answer = await server.get(`/ipfs/${block.cid}?format=raw`);
      assertEquals(answer.status, 200);
      assertEquals(new Uint8Array(await answer.arrayBuffer()), block.bytes);
    }
    const v0 = CID.createV0(CID.parse(root).multihash as never).toString();
    const answer = await server.get(`/ipfs/${v0}`, {
      headers: { accept: "application/vnd.ipld.raw" },
    });
    assertEquals(answer.status, 200);
    assertEquals(new Uint8Array(await answer.arrayBuffer()), blocks.at(-1)!.bytes);
    // The whole DAG as a CAR: every block once, verified by @ipld/car and multiformats.
    const whole = await server.get(`/ipfs/${root}?format=car`);
    assertEquals(
      whole.headers.get("content-type"),
      "application/vnd.ipld.car; version=1; order=dfs; dups=n",
    );
    const read = await readVerifiedCar(new Uint8Array(await whole.arrayBuffer()));
    assertEquals(read.roots, [root]);
    assertEquals(read.blocks[0].cid.toString(), root);
    assertEquals(
      read.blocks.map((b) => b.cid.toString()).sort(),
      blocks.map((b) => b.cid.toString()).sort(),
    );
  });

  test("a CARv2 (padding, then its index) is stored and its blocks are found at their offsets", async () => {
    await using server = await deployment.start();
    const { root, car } = await site();
    const v2 = await carV2Of(car, 7);
    const { response } = await uploadCar(server, v2);
    assertEquals(response.status, 200);
    assertEquals((await response.json()).roots, [root]);
    for (const block of await blocksOf(car)) {
      const answer = await server.get(`/ipfs/${block.cid}?format=raw`);
      assertEquals(new Uint8Array(await answer.arrayBuffer()), block.bytes);
    }
  });

  test("a CAR with a corrupted block is refused, naming it, and nothing is kept or charged", async () => {
    const { car } = await site();
    await using server = await deployment.start({ sponsoredCap: car.length });
    const blocks = await blocksOf(car);
    const bad = car.slice();
    const leaf = blocks[1];
    const at = bad.findIndex((_, i) =>
      bad.subarray(i, i + 64).every((b, k) => b === leaf.bytes[k])
    );
    bad[at + 1000] ^= 0x01;
    const { cid, response } = await uploadCar(server, bad);
    assertEquals(response.status, 400);
    const error = await errorOf(response);
    assertEquals(error.error, "invalid_car");
    assertMatch(
      error.message,
      new RegExp(`Block ${leaf.cid} at byte \\d+ does not hash to its cid`),
    );
    assertEquals(await server.server.metadata.catalog.getPiece(cid), null);
    assertEquals(await server.server.store.stat(cid), null);
    assertEquals(await server.server.metadata.blocks.countBlocks(cid), 0);
    assertEquals(await deployment.staged(server), []);
    assertEquals((await server.get(`/ipfs/${blocks[0].cid}?format=raw`)).status, 404);
    // Nothing charged: the good CAR, as large as the cap, still fits today.
    assertEquals((await uploadCar(server, car)).response.status, 200);
  });

  test("a CAR whose block uses another hash is refused with the hash's name", async () => {
    await using server = await deployment.start();
    const good = await rawBlock(new TextEncoder().encode("fine"));
    const blake = { cid: cidWithHash(0xb220), bytes: new TextEncoder().encode("data") };
    const { cid, response } = await uploadCar(server, await carOf([good.cid], [good, blake]));
    assertEquals(response.status, 400);
    const error = await errorOf(response);
    assertEquals(error.error, "invalid_car");
    assertMatch(
      error.message,
      /uses the blake2b-256 multihash \(0xb220\); only sha2-256 and identity/,
    );
    assertEquals(await server.server.metadata.catalog.getPiece(cid), null);
    assertEquals(await server.server.metadata.blocks.countBlocks(cid), 0);
  });

  test("a raw upload under its sha2-256 cid is itself a block", async () => {
    await using server = await deployment.start();
    const block = await rawBlock(seededBytes(300_000, 5));
    assertEquals(
      (await server.upload(block.cid.toString(), block.bytes as Uint8Array<ArrayBuffer>)).status,
      200,
    );
    const answer = await server.get(`/ipfs/${block.cid}`, {
      headers: { accept: "application/vnd.ipld.raw" },
    });
    assertEquals(answer.status, 200);
    assertEquals(answer.headers.get("content-location"), `/ipfs/${block.cid}?format=raw`);
    assertEquals(new Uint8Array(await answer.arrayBuffer()), block.bytes);
    const car = await readVerifiedCar(
      new Uint8Array(await (await server.get(`/ipfs/${block.cid}?format=car`)).arrayBuffer()),
    );
    assertEquals(car.blocks.map((b) => b.cid.toString()), [block.cid.toString()]);
    assertOk(car.blocks[0].bytes.length === block.bytes.length);
  });

  test("a CAR sent through /api/tus in PATCHes that cut its blocks is indexed as an upload's", async () => {
    const { root, car } = await site();
    await using server = await deployment.start();
    const { cid } = await pieceCid(car);
    const url = await tusCreated(server.url, { cid, length: car.length, filetype: CAR_TYPE });
    const cuts = [0, 1_500_000, 2_900_000, car.length]; // inside leaves of 1 MiB
    for (let i = 0; i + 1 < cuts.length; i++) {
      const answer = await tusPatch(url, cuts[i], car.slice(cuts[i], cuts[i + 1]));
      assertEquals(answer.status, 204, await answer.text());
    }
    const blocks = await blocksOf(car);
    assertEquals(await server.server.metadata.blocks.countBlocks(cid), blocks.length);
    for (const block of blocks) {
      const answer = await server.get(`/ipfs/${block.cid}?format=raw`);
      assertEquals(new Uint8Array(await answer.arrayBuffer()), block.bytes, `${block.cid}`);
    }
    const result = await (await fetch(url)).json();
    assertEquals([result.cid, result.roots], [cid, [root]]);
    const fetched = await verifiedFetch(server.url, `ipfs://${root}/hello.txt`);
    assertEquals(fetched.result.status, 200, fetched.stderr);
  });

  test("a CAR through /api/tus with a corrupted block ends at that PATCH, nothing kept or charged", async () => {
    const { car } = await site();
    await using server = await deployment.start({ sponsoredCap: car.length });
    const blocks = await blocksOf(car);
    const bad = car.slice();
    const at = bad.findIndex((_, i) =>
      bad.subarray(i, i + 64).every((b, k) => b === blocks[1].bytes[k])
    );
    bad[at + 1000] ^= 0x01;
    const { cid } = await pieceCid(bad);
    const url = await tusCreated(server.url, { cid, length: bad.length, filetype: CAR_TYPE });
    assertEquals((await tusPatch(url, 0, bad.slice(0, at - 10))).status, 204);
    const refused = await tusPatch(url, at - 10, bad.slice(at - 10, 2 * at));
    assertEquals(refused.status, 400);
    const error = await errorOf(refused);
    assertEquals(error.error, "invalid_car");
    assertMatch(error.message, new RegExp(`Block ${blocks[1].cid} at byte \\d+ does not hash`));
    assertEquals((await tusHead(url)).status, 404);
    assertEquals(await server.server.metadata.catalog.getPiece(cid), null);
    assertEquals(await server.server.metadata.blocks.countBlocks(cid), 0);
    assertEquals(await Array.fromAsync(server.server.store.partials.list()), []);
    assertEquals(await server.server.services.ledger.reservedTotal(), 0);
    // Nothing charged: the good CAR, as large as the cap, still fits today.
    const good = await tusCreate(server.url, {
      cid: (await pieceCid(car)).cid,
      length: car.length,
      filetype: CAR_TYPE,
      body: car,
    });
    assertEquals([good.status, good.headers.get("x-storage-deal-id") !== null], [201, true]);
  });
}
