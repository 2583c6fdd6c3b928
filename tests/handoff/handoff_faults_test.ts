/**
 * The hand-off when things go wrong: the provider goes away during uploads, the
 * server is killed in the middle of a hand-off, two instances share the
 * queue; and the operator's `main.ts handoff status|retry`. Against the fake
 * Curio provider (tests/helpers/fake_pdp/), which adds a piece as often as
 * it is asked: so "each piece added exactly once" is the server's doing.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { startFakePdp } from "../helpers/fake_pdp/mod.ts";
import type { FakePdp } from "../helpers/fake_pdp/mod.ts";
import { bearer, patternBytes, signup } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import {
  FAST_PDP,
  freePort,
  handoffArgs,
  handoffOnceSettled,
  startHandoffServer,
} from "../helpers/handoff.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";
import { runMain } from "../helpers/main_process.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import { scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";

/** Piece cids the provider's data sets hold, each as often as it was added. */
function addedCids(pdp: FakePdp): string[] {
  return pdp.addedPieces().filter((p) => !p.removed).map((p) => p.pieceCid).sort();
}

async function uploadPieces(server: { url: string }, count: number, seed: number) {
  const cids: string[] = [];
  for (let i = 0; i < count; i++) {
    const bytes = patternBytes(2000 + i, seed + i);
    const cid = pieceCidOf(bytes);
    const response = await fetch(`${server.url}/api/upload?cid=${cid}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: bytes,
    });
    assertEquals(response.status, 200, await response.text());
    cids.push(cid);
  }
  return cids.sort();
}

Deno.test("handoff faults: the provider goes down during uploads; uploads still 200; all go live after", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  await pdp.goDown("refused");
  const deals: string[] = [];
  for (let i = 0; i < 5; i++) {
    const bytes = patternBytes(3000 + i, 40 + i);
    const response = await server.upload(pieceCidOf(bytes), bytes, { headers: bearer(token) });
    assertEquals(response.status, 200);
    deals.push((await response.json()).dealId);
  }
  await eventually(async () => {
    const health = await (await server.get("/healthz")).json();
    return health.handoff.answering === false && health.handoff.problem !== null;
  }, "/healthz to say the provider does not answer");
  assertEquals((await server.get("/healthz")).status, 200, "the service stays ok");
  pdp.comeUp();
  for (const dealId of deals) {
    await handoffOnceSettled(server, token, dealId, (h) => h.state === "live", 60_000);
  }
  assertEquals(addedCids(pdp).length, 5);
  assertEquals(new Set(addedCids(pdp)).size, 5);
});

Deno.test("handoff faults: SIGKILL in the middle of a hand-off, restart: each piece added exactly once", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  const dataDir = await Deno.makeTempDir({ prefix: "storage-handoff-kill-" });
  const port = freePort();
  const args = await handoffArgs(pdp, dataDir, port);
  try {
    let cids: string[];
    {
      await using first = await spawnServer(dataDir, args);
      // The provider sends the first add's transaction but holds its answer: the server is
      // killed before it learns the add's Location, the one moment an add is in doubt.
      pdp.holdAddAnswers();
      cids = await uploadPieces(first, 12, 100);
      await eventually(
        () => pdp.signatures().some((s) => s.kind === "AddPieces" && s.route.endsWith("/pieces")),
        "the first add to reach the provider",
        { timeoutMs: 30_000 },
      );
      first.process.kill("SIGKILL");
      await first.exited;
      pdp.releaseAddAnswers();
    }
    await using second = await spawnServer(dataDir, args);
    await eventually(() => addedCids(pdp).length >= 12, "all 12 pieces added", {
      timeoutMs: 60_000,
    });
    // A few more runs: nothing is added again.
    const status = async () =>
      JSON.parse(
        (await runMain(["handoff", "status", "--json", "--data-dir", dataDir], { dataDir })).stdout,
      );
    await eventually(async () => (await status()).pieces.live === 12, "12 pieces live", {
      timeoutMs: 30_000,
    });
    assertEquals(addedCids(pdp), cids, "each piece added exactly once");
    assertOk(second.url.endsWith(`:${port}`));
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("handoff faults: main.ts handoff status and retry --failed send a refused piece again", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  const dataDir = await Deno.makeTempDir({ prefix: "storage-handoff-retry-" });
  try {
    const bytes = patternBytes(5000, 77);
    const cid = pieceCidOf(bytes);
    pdp.refusePiece(cid);
    {
      await using server = await startHandoffServer(pdp, { dataDir });
      const { token } = await signup(server);
      const result = await (await server.upload(cid, bytes, { headers: bearer(token) })).json();
      await handoffOnceSettled(server, token, result.dealId, (h) => h.state === "failed");
    }
    const status = await runMain(["handoff", "status", "--data-dir", dataDir], { dataDir });
    assertEquals(status.code, 0, status.stderr);
    assertOk(status.stdout.includes("the provider could not take the piece"), status.stdout);
    const usage = await runMain(["handoff", "retry", "--data-dir", dataDir], { dataDir });
    assertEquals(usage.code, 2, "retry needs --failed or --deal");
    const retried = await runMain(["handoff", "retry", "--failed", "--data-dir", dataDir], {
      dataDir,
    });
    assertEquals([retried.code, JSON.parse(retried.stdout)], [0, { requeued: 1 }]);
    const again = await runMain(["handoff", "retry", "--failed", "--data-dir", dataDir], {
      dataDir,
    });
    assertEquals(again.code, 1, "nothing failed any more");
    // The provider takes it now: the next server's run hands it off.
    const refusedBefore = pdp.pullItems().length;
    pdp.acceptPiece(cid);
    await using server = await startHandoffServer(pdp, { dataDir });
    await eventually(() => addedCids(pdp).includes(cid), "the retried piece added");
    assertOk(pdp.pullItems().length > refusedBefore);
    void (server satisfies TestServer);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "handoff faults: two instances on S3 + PostgreSQL share the queue; each piece added once",
  ignore: !scaleOutAvailable(),
  async fn() {
    await using pdp = await startFakePdp(FAST_PDP);
    await using deployment = await scaleOutForTests();
    const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
    try {
      const instances: TestServer[] = [];
      for (const dir of dirs) {
        const port = freePort();
        const args = await handoffArgs(pdp, dir, port);
        instances.push(
          await deployment.startInstance({ args, jobIntervals: { handoff: 20 } }),
        );
      }
      const cids = [
        ...await uploadPieces(instances[0], 6, 200),
        ...await uploadPieces(instances[1], 6, 300),
      ].sort();
      await eventually(() => addedCids(pdp).length >= 12, "all 12 pieces added", {
        timeoutMs: 60_000,
      });
      assertEquals(addedCids(pdp), cids, "each piece added exactly once");
      for (const instance of instances) await instance[Symbol.asyncDispose]();
    } finally {
      for (const dir of dirs) await Deno.remove(dir, { recursive: true });
    }
  },
});
