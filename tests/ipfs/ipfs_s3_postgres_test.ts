/**
 * The IPFS suite (ipfs_suite.ts) scaled out: pieces in a real S3 bucket (Ceph
 * radosgw), metadata in a real PostgreSQL, so blocks are found through
 * PostgreSQL's block index and read with ranged GETs.
 */
import { objectKeys } from "../helpers/s3.ts";
import { scaleOutAvailable, scaleOutServer } from "../helpers/scale_out.ts";
import type { ScaleOut } from "../helpers/scale_out.ts";
import type { TestServer } from "../helpers/server.ts";
import { ipfsSuite } from "./ipfs_suite.ts";

const deployments = new WeakMap<TestServer, ScaleOut>();

ipfsSuite({
  name: "S3 + PostgreSQL",
  ignore: !scaleOutAvailable(),
  async start(options = {}) {
    const server = await scaleOutServer({
      args: options.sponsoredCap === undefined
        ? []
        : ["--sponsored-daily-cap", String(options.sponsoredCap)],
    });
    deployments.set(server, server.deployment);
    return server;
  },
  staged: async (server) => await objectKeys(deployments.get(server)!.s3, "staging/"),
});
