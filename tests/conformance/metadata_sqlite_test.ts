import { runMetadataConformance } from "./metadata_conformance.ts";
import { FakeClock } from "../helpers/clock.ts";
import { openDatabase } from "../../src/db/sqlite/database.ts";
import { sqliteMetadata } from "../../src/backends/metadata.ts";

runMetadataConformance("sqlite", async () => {
  const dir = await Deno.makeTempDir({ prefix: "metadata-sqlite-" });
  const clock = new FakeClock();
  const path = `${dir}/storage.db`;
  const metadata = sqliteMetadata({ db: openDatabase({ path }), clock, path });
  return {
    metadata,
    clock,
    async [Symbol.asyncDispose]() {
      await metadata.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
});
