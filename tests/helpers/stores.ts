/**
 * The real server on each piece store: the data directory ("disk") and a
 * bucket of the test S3 ("s3", tests/helpers/s3.ts), for the HTTP tests that
 * must hold on both. `storeTests` declares one test per store; the S3 one is
 * ignored where no S3 can run (tests/helpers/s3.ts says where the S3 comes from).
 */
import { s3ForTests, s3ServerFlags, s3ServerKeys, s3UnavailableReason } from "./s3.ts";
import type { TestBucket } from "./s3.ts";
import { startTestServer } from "./server.ts";
import type { TestServer, TestServerOptions } from "./server.ts";

export const STORES = ["disk", "s3"] as const;
export type StoreKind = typeof STORES[number];

export interface StoreServer extends TestServer {
  store: StoreKind;
  /** The test's bucket (S3 only): to delete or change objects behind the server's back. */
  bucket: TestBucket | null;
}

export async function startServerOn(
  store: StoreKind,
  options: TestServerOptions = {},
): Promise<StoreServer> {
  if (store === "disk") return { ...await startTestServer(options), store, bucket: null };
  const bucket = await s3ForTests();
  try {
    const server = await startTestServer({
      ...options,
      args: [...s3ServerFlags(bucket), ...(options.args ?? [])],
      env: { ...s3ServerKeys(bucket), ...options.env },
    });
    return {
      ...server,
      store,
      bucket,
      async [Symbol.asyncDispose]() {
        await server[Symbol.asyncDispose]();
        await bucket.dispose();
      },
    };
  } catch (error) {
    await bucket.dispose();
    throw error;
  }
}

const s3Unavailable = s3UnavailableReason();

/** One test per store: `name (disk)` and `name (s3)`, each with a server of its own. */
export function storeTests(
  name: string,
  fn: (server: StoreServer, t: Deno.TestContext) => Promise<void>,
  options: TestServerOptions = {},
): void {
  for (const store of STORES) {
    Deno.test({
      name: `${name} (${store})`,
      ignore: store === "s3" && s3Unavailable !== null,
      async fn(t) {
        await using server = await startServerOn(store, options);
        await fn(server, t);
      },
    });
  }
}
