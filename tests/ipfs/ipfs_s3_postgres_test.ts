/**
 * The IPFS suite (ipfs_suite.ts) scaled out: pieces in a real S3 bucket (Ceph
 * radosgw), metadata in a real PostgreSQL, so blocks are found through
 * PostgreSQL's block index and read with ranged GETs.
 */
import { objectKeys, s3Available, s3ForTests, s3ServerFlags, s3ServerKeys } from "../helpers/s3.ts";
import { postgresAvailable, postgresForTests } from "../helpers/postgres.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { ipfsSuite } from "./ipfs_suite.ts";

const buckets = new WeakMap<TestServer, Awaited<ReturnType<typeof s3ForTests>>>();

ipfsSuite({
  name: "S3 + PostgreSQL",
  ignore: !s3Available() || !postgresAvailable(),
  async start(options = {}) {
    const database = await postgresForTests();
    const bucket = await s3ForTests();
    const server = await startTestServer({
      args: [
        "--database",
        database.url,
        ...s3ServerFlags(bucket),
        ...(options.sponsoredCap === undefined
          ? []
          : ["--sponsored-daily-cap", String(options.sponsoredCap)]),
      ],
      env: s3ServerKeys(bucket),
    });
    const disposeServer = server[Symbol.asyncDispose];
    const disposable = Object.assign(server, {
      async [Symbol.asyncDispose]() {
        await disposeServer.call(server);
        await bucket.dispose();
        await database[Symbol.asyncDispose]();
      },
    });
    buckets.set(disposable, bucket);
    return disposable;
  },
  staged: async (server) => await objectKeys(buckets.get(server)!, "staging/"),
});
