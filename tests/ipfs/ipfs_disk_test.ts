/** The IPFS suite (ipfs_suite.ts) on a data directory: pieces on disk, SQLite. */
import { assertEquals } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { packFiles } from "../helpers/ipfs.ts";
import { tempFiles } from "../helpers/pieces.ts";
import { startTestServer } from "../helpers/server.ts";
import { ipfsSuite, uploadCar, verifiedFetch } from "./ipfs_suite.ts";

ipfsSuite({
  name: "disk + SQLite",
  start: (options = {}) =>
    startTestServer({
      args: options.sponsoredCap === undefined
        ? []
        : ["--sponsored-daily-cap", String(options.sponsoredCap)],
    }),
  staged: (server) => tempFiles(server.dataDir),
});

Deno.test("ipfs (disk + SQLite): verified-fetch's burst of 64 parallel leaf requests is served in full, with the server's default limits", async () => {
  await using server = await startTestServer();
  const file = seededBytes(64 * 1024 * 1024, 64); // 64 leaves of 1 MiB under one file node
  const { root, car } = await packFiles({ "big/file.bin": file, "note.txt": new Uint8Array(3) });
  assertEquals((await uploadCar(server, car)).response.status, 200);
  const fetched = await verifiedFetch(server.url, `ipfs://${root}/big/file.bin`);
  const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", file)).toHex();
  assertEquals([fetched.result.status, fetched.result.sha256], [200, expected], fetched.stderr);
});
