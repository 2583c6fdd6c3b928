/**
 * The PostgreSQL metadata backend against a real PostgreSQL server: the same
 * conformance suite as SQLite, then what only a shared database has to get
 * right: caps shared exactly by several instances, reservations of a dead
 * instance given back, cid locks across instances, one key for all, one
 * migration when instances start together, and a clear refusal when the
 * database cannot be reached.
 */
import postgres from "postgres";
import { assertEquals, assertOk, assertRejects } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { runMetadataConformance } from "./metadata_conformance.ts";
import { postgresAvailable, postgresForTests, postgresTest } from "../helpers/postgres.ts";
import {
  PostgresDatabase,
  PostgresUnavailableError,
} from "../../src/db/postgres/postgres_database.ts";
import { sweepDeadInstances } from "../../src/db/postgres/instances.ts";
import { POSTGRES_MIGRATIONS } from "../../src/db/postgres/migrations.ts";
import { DatabaseTooNewError } from "../../src/db/too_new.ts";
import { postgresMetadata } from "../../src/backends/metadata.ts";
import { silentLogger } from "../../src/kernel/log.ts";
import { HmacKey } from "../../src/auth/hmac_key.ts";

// On a developer's machine without PostgreSQL these are skipped; in CI (which installs it) they run.
const ignore = !postgresAvailable();

async function openInstance(url: string, clock = new FakeClock()): Promise<PostgresDatabase> {
  return await PostgresDatabase.open({ url, logger: silentLogger, clock });
}

/**
 * A test on `count` instances opened together on a fresh database, all
 * closed after it, whatever it does.
 */
function instancesTest(
  name: string,
  count: number,
  fn: (instances: PostgresDatabase[]) => Promise<void>,
): void {
  postgresTest(name, async (database) => {
    const instances = await Promise.all(
      Array.from({ length: count }, () => openInstance(database.url)),
    );
    try {
      await fn(instances);
    } finally {
      await Promise.all(instances.map((i) => i.close()));
    }
  });
}

runMetadataConformance("postgres", async () => {
  const database = await postgresForTests();
  const clock = new FakeClock();
  const metadata = postgresMetadata(await openInstance(database.url, clock));
  return {
    metadata,
    clock,
    async [Symbol.asyncDispose]() {
      await metadata.close();
      await database[Symbol.asyncDispose]();
    },
  };
}, { ignore });

instancesTest(
  "postgres: uploads spread over three instances share one cap exactly",
  3,
  async (instances) => {
    const attempts = Array.from(
      { length: 60 },
      (_, i) => instances[i % 3].capLedger.reserve("ip:shared", 1000, 25_000),
    );
    const results = await Promise.all(attempts);
    assertEquals(results.filter((r) => r.ok).length, 25);
    assertEquals(await instances[0].capLedger.reservedTotal(), 25_000);
    await Promise.all(results.map((r) => r.ok ? r.reservation.release() : null));
    assertEquals(await instances[2].capLedger.reservedTotal(), 0);
  },
);

postgresTest(
  "postgres: a silent instance's reservations are given back; a clean stop gives its own",
  async (database) => {
    const live = await openInstance(database.url);
    const doomed = await openInstance(database.url);
    const stopping = await openInstance(database.url);
    try {
      assertOk((await doomed.capLedger.reserve("ip:dead", 4000, 10_000)).ok);
      assertOk((await stopping.capLedger.reserve("ip:dead", 1000, 10_000)).ok);
      assertOk((await live.capLedger.reserve("ip:dead", 1000, 10_000)).ok);
      // A clean stop releases what the stopping instance held.
      await stopping.close();
      assertEquals((await live.capLedger.status("ip:dead", 10_000)).reservedBytes, 5000);
      // The doomed instance goes silent (as after a SIGKILL): its heartbeat is a minute old.
      await live.sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute'
      WHERE id = ${doomed.instanceId}`;
      const swept = await sweepDeadInstances(live.sql, 30_000);
      assertEquals(swept, { instances: 1, reservations: 1, bytes: 4000 });
      assertEquals((await live.capLedger.status("ip:dead", 10_000)).reservedBytes, 1000);
      assertEquals(await sweepDeadInstances(live.sql, 30_000), {
        instances: 0,
        reservations: 0,
        bytes: 0,
      });
    } finally {
      await Promise.all([live.close(), doomed.close(), stopping.close()]);
    }
  },
);

instancesTest("postgres: cid locks hold across instances", 2, async ([a, b]) => {
  const events: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => entered = resolve);
  const first = a.cidLocks.run("bafkshared", async () => {
    events.push("a in");
    entered();
    await held;
    events.push("a out");
  });
  await inside;
  const second = b.cidLocks.run("bafkshared", () => {
    events.push("b in");
    return Promise.resolve();
  });
  await b.cidLocks.run("bafkelse", () => {
    events.push("b other");
    return Promise.resolve();
  });
  release();
  await Promise.all([first, second]);
  assertEquals(events, ["a in", "b other", "a out", "b in"]);
});

instancesTest("postgres: one HMAC key for every instance, rotated for all", 2, async ([a, b]) => {
  const [keyA, keyB] = await Promise.all([
    HmacKey.fromSource(a.hmacKeys),
    HmacKey.fromSource(b.hmacKeys),
  ]);
  const sign = async (key: HmacKey) =>
    new Uint8Array(
      await crypto.subtle.sign("HMAC", key.key, new TextEncoder().encode("x")),
    ).toHex();
  assertEquals(await sign(keyA), await sign(keyB), "instances starting together agree");
  await a.hmacKeys.rotate(crypto.getRandomValues(new Uint8Array(32)).toHex());
  assertEquals(await keyB.reload(), true);
  assertEquals(await keyA.reload(), true);
  assertEquals(await sign(keyA), await sign(keyB));
});

postgresTest(
  "postgres: instances starting together migrate once; a newer schema is refused",
  async (database) => {
    const instances = await Promise.all([1, 2, 3, 4].map(() => openInstance(database.url)));
    await Promise.all(instances.map((i) => i.close()));
    const admin = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await admin`SELECT version FROM schema_version`;
      assertEquals(row.version, POSTGRES_MIGRATIONS.at(-1)!.version);
      await admin`UPDATE schema_version SET version = 99`;
    } finally {
      await admin.end({ timeout: 5 });
    }
    await assertRejects(() => openInstance(database.url), /schema is version 99/);
    try {
      await openInstance(database.url);
    } catch (error) {
      assertOk(error instanceof DatabaseTooNewError);
    }
  },
);

Deno.test({
  name: "postgres: an unreachable database is refused at start, quickly and without the password",
  ignore,
  fn: async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const started = performance.now();
    let caught: unknown;
    try {
      await openInstance(`postgres://svc:hunter2-secret@127.0.0.1:${port}/storage`);
    } catch (error) {
      caught = error;
    }
    assertOk(caught instanceof PostgresUnavailableError, String(caught));
    assertOk(!String((caught as Error).message).includes("hunter2"), (caught as Error).message);
    assertOk((caught as Error).message.includes(`127.0.0.1:${port}/storage`));
    assertOk(performance.now() - started < 10_000);
  },
});
