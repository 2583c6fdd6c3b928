/**
 * A CAR is priced by its blocks (decisions: "Holding up, second pass"): one
 * upload holds at most its tier's cap of blocks (--sponsored-car-max-blocks,
 * --car-max-blocks; 413 too_many_blocks, nothing stored, nothing charged),
 * a gateway answer walks at most --ipfs-max-walk-blocks blocks (413 before
 * the answer starts), and one client address has at most two walks at once
 * (429 beyond; another address is served). A chunk of tiny blocks is checked
 * in slices; the indexing's slices are checked by the metadata conformance
 * suite.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { blocksOf, CAR_TYPE, linkedCar } from "../helpers/ipfs.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import { tempFiles } from "../helpers/pieces.ts";
import { requestUnread } from "../helpers/unread_answer.ts";
import { eventually, turnsDuring } from "../helpers/wait.ts";
import { blockCar } from "../../scripts/bench_attack_surfaces.ts";
import { CarUpload } from "../../src/ipfs/car_upload.ts";

const CAR = { "content-type": CAR_TYPE };

Deno.test("CAR bounds: a sponsored CAR of more blocks than --sponsored-car-max-blocks is 413, nothing stored or charged; a token's cap is --car-max-blocks", async () => {
  const { car } = await linkedCar(4); // 5 blocks
  await using server = await startTestServer({
    args: [
      "--sponsored-car-max-blocks",
      "4",
      "--car-max-blocks",
      "5",
      "--sponsored-daily-cap",
      String(car.length),
    ],
  });
  const refused = await server.upload("bafkmanyblocks01", car, { headers: CAR });
  assertEquals(refused.status, 413);
  const error = await errorOf(refused);
  assertEquals(error.error, "too_many_blocks");
  assertMatch(error.message, /more than 4 blocks/);
  assertEquals(await server.server.metadata.catalog.getPiece("bafkmanyblocks01"), null);
  assertEquals(await server.server.metadata.blocks.countBlocks("bafkmanyblocks01"), 0);
  assertEquals(await tempFiles(server.dataDir), []);
  // Nothing charged (the day's cap is the refused CAR's size): a CAR of four blocks fits.
  const { car: fewer } = await linkedCar(3);
  const fits = await server.upload("bafkfewerblocks1", fewer, { headers: CAR });
  assertEquals(fits.status, 200, await fits.text());
  // A token's CAR is held to --car-max-blocks: five blocks pass.
  const { token } = await signup(server);
  const response = await server.upload("bafkmanyblocks01", car, {
    headers: { ...CAR, ...bearer(token) },
  });
  assertEquals(response.status, 200, await response.text());
  assertEquals(await server.server.metadata.blocks.countBlocks("bafkmanyblocks01"), 5);
});

Deno.test("CAR bounds: a tus upload of a CAR past the tier's block cap is 413 and removed", async () => {
  await using server = await startTestServer({ args: ["--sponsored-car-max-blocks", "2"] });
  const { car } = await linkedCar(2);
  const metadata = `cid ${btoa("bafktusmanyblock")},filetype ${btoa(CAR_TYPE)}`;
  const created = await fetch(`${server.url}/api/tus`, {
    method: "POST",
    headers: {
      "tus-resumable": "1.0.0",
      "upload-length": String(car.length),
      "upload-metadata": metadata,
    },
  });
  assertEquals(created.status, 201, await created.text());
  const location = created.headers.get("location")!;
  const patched = await fetch(location, {
    method: "PATCH",
    headers: {
      "tus-resumable": "1.0.0",
      "content-type": "application/offset+octet-stream",
      "upload-offset": "0",
    },
    body: car,
  });
  assertEquals([patched.status, (await errorOf(patched)).error], [413, "too_many_blocks"]);
  const gone = await fetch(location, { method: "HEAD", headers: { "tus-resumable": "1.0.0" } });
  await gone.body?.cancel();
  assertEquals(gone.status, 404);
});

Deno.test("CAR bounds: a gateway answer of more blocks than --ipfs-max-walk-blocks is 413 before it starts; its parts are served", async () => {
  await using server = await startTestServer({ args: ["--ipfs-max-walk-blocks", "3"] });
  const { root, car } = await linkedCar(3); // 4 blocks
  assertEquals((await server.upload("bafkwalkbounds01", car, { headers: CAR })).status, 200);
  for (const method of ["GET", "HEAD"]) {
    const answer = await server.get(`/ipfs/${root}?format=car`, { method });
    assertEquals(answer.status, 413, method);
    if (method === "GET") {
      const error = await errorOf(answer);
      assertEquals(error.error, "too_many_blocks");
      assertMatch(error.message, /more than 3 blocks/);
    } else {
      await answer.body?.cancel();
    }
  }
  const rootAlone = await server.get(`/ipfs/${root}?format=car&dag-scope=block`);
  await rootAlone.body?.cancel();
  assertEquals(rootAlone.status, 200);
});

Deno.test("CAR bounds: the walk's count takes a leaf listed again once, and a DAG of exactly the bound is served", async () => {
  await using server = await startTestServer({ args: ["--ipfs-max-walk-blocks", "3"] });
  // Six links to two leaves: three blocks to send (the root and two leaves), not seven.
  const repeated = await linkedCar(6, (i) => new TextEncoder().encode(`leaf ${i % 2}`));
  assertEquals(
    (await server.upload("bafkwalkrepeat01", repeated.car, { headers: CAR })).status,
    200,
  );
  const answer = await server.get(`/ipfs/${repeated.root}?format=car`);
  assertEquals(answer.status, 200, "three distinct blocks are within a bound of three");
  assertEquals((await blocksOf(new Uint8Array(await answer.arrayBuffer()))).length, 3);
  // One block more than the bound is refused: the count stops at the bound, not before.
  const four = await linkedCar(3, (i) => new TextEncoder().encode(`other leaf ${i}`));
  assertEquals((await server.upload("bafkwalkrepeat02", four.car, { headers: CAR })).status, 200);
  const refused = await server.get(`/ipfs/${four.root}?format=car`);
  await refused.body?.cancel();
  assertEquals(refused.status, 413);
});

Deno.test("CAR bounds: one address walks two CAR answers at once; a third is 429, another address is served", async () => {
  await using server = await startTestServer();
  // 48 leaves of 1 MiB: more than the socket buffers take while the client does not read.
  const { root, car } = await linkedCar(48, (i) => seededBytes(1024 * 1024, i + 1));
  assertEquals((await server.upload("bafkwalkslots001", car, { headers: CAR })).status, 200);
  const port = Number(new URL(server.url).port);
  const path = `/ipfs/${root}?format=car`;
  const held = [
    await requestUnread({ port, path }),
    await requestUnread({ port, path }),
  ];
  try {
    assertEquals(await Promise.all(held.map((h) => h.status)), [200, 200]);
    const third = await server.get(path);
    assertEquals([third.status, (await errorOf(third)).error], [429, "rate_limited"]);
    assertEquals(third.headers.get("retry-after"), "1");
    const other = await requestUnread({ port, path, from: "127.0.0.2" });
    assertEquals(await other.status, 200);
    other.close();
  } finally {
    for (const h of held) h.close();
  }
  // Their slots come back once their answers end.
  await eventually(async () => {
    const again = await server.get(path, { method: "HEAD" });
    await again.body?.cancel();
    return again.status === 200;
  }, "a walk slot given back after the unread answers were dropped");
});

Deno.test("CAR bounds: a chunk of many tiny blocks is checked in slices that let the event loop turn", async () => {
  const { car } = blockCar(50_000); // 50,000 blocks of 8 bytes in one chunk of about 2 MiB
  const upload = new CarUpload({ maxBlocks: 100_000 });
  const turns = await turnsDuring(() => upload.onChunk(car) ?? Promise.resolve());
  assertEquals(turns > 1, true, `the event loop turned ${turns} times while the chunk was checked`);
  assertEquals(upload.blocks.size, 50_000 + 51);
  assertEquals((await upload.finish()).roots.length, 1);
});

Deno.test("CAR bounds: chunks of many tiny blocks, each checked well within a slice, still give the event loop a turn every 2,048 blocks", async () => {
  // Reads that complete back to back never reach the timers: each chunk's check must yield.
  const { car } = blockCar(30_000); // about 1.3 MiB
  const chunks = Math.ceil(car.length / (40 * 1024)); // about 900 blocks a chunk: 1-2 ms of work each
  const upload = new CarUpload({ maxBlocks: 100_000 });
  const turns = await turnsDuring(async () => {
    for (let i = 0; i < chunks; i++) {
      await (upload.onChunk(car.subarray(i * 40 * 1024, (i + 1) * 40 * 1024)) ?? Promise.resolve());
    }
  });
  assertEquals(upload.blocks.size, 30_000 + 31);
  // A turn once 2,048 blocks are checked, at the end of the chunk that reached them.
  const atLeast = Math.floor((30_000 + 31) / (2048 + 1000));
  assertEquals(turns >= atLeast, true, `${turns} turns in ${chunks} chunks (at least ${atLeast})`);
});
