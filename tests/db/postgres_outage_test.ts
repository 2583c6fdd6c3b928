/**
 * PostgreSQL going away under a running server: requests that need it get a
 * clear 503 storage_offline JSON error (never a 500), /healthz turns 503 so a
 * load balancer takes the instance out, and nothing half-written is left.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import { storedPieces, tempFiles } from "../helpers/pieces.ts";
import { postgresAvailable } from "../helpers/postgres.ts";
import { startPostgres } from "../../scripts/lib/postgres_server.ts";

const ignore = !postgresAvailable();

Deno.test({
  name: "postgres outage: requests answer 503 storage_offline, /healthz 503, no 500",
  ignore,
  fn: async () => {
    const postgres = await startPostgres({ durable: false });
    try {
      await using server = await startTestServer({ args: ["--database", postgres.url] });
      assertEquals((await server.upload("bafkoutage00001", "before")).status, 200);
      await postgres.stop();
      for (
        const response of [
          await server.upload("bafkoutage00002", "during"),
          await server.get("/api/limits"),
        ]
      ) {
        assertEquals(response.status, 503);
        const body = await errorOf(response);
        assertEquals(body.error, "storage_offline");
        assertOk(body.message.includes("database cannot be reached"), body.message);
        assertOk(response.headers.get("retry-after") !== null);
      }
      const health = await server.get("/healthz");
      assertEquals(health.status, 503);
      assertEquals((await health.json()).database.ok, false);
      assertEquals(server.logs.filter((line) => line.msg === "unhandled error"), []);
      // The refused upload left nothing on disk: the one piece from before, no temp file.
      assertEquals((await storedPieces(server.dataDir)).length, 1);
      assertEquals(await tempFiles(server.dataDir), []);
    } finally {
      await postgres.stop();
    }
  },
});
