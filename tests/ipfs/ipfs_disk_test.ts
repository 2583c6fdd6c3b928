/** The IPFS suite (ipfs_suite.ts) on a data directory: pieces on disk, SQLite. */
import { tempFiles } from "../helpers/pieces.ts";
import { startTestServer } from "../helpers/server.ts";
import { ipfsSuite } from "./ipfs_suite.ts";

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
