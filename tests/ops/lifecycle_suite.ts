/**
 * The lifecycle as users and operators meet it, one suite every deployment
 * passes: a data directory (SQLite and disk, lifecycle_disk_test.ts) and the
 * scale-out one (PostgreSQL and a real S3, lifecycle_scale_out_test.ts). The
 * real server answers over HTTP; its clock is a FakeClock the test moves, and
 * the sweeps are the server's own (`server.gc.sweep`), so terms of days and a
 * grace period of days pass without waiting.
 *
 * Each state transition (active → expired, active → deleted, expired →
 * active by extension, removed → stored by re-upload), the shared-piece and
 * manifest rules, 410 gone, the blocks of an indexed CAR (they live while
 * their piece does), orphans, and the sweep/upload race on one cid.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { bearer, errorOf, signup } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { seededBytes, sha256 } from "../helpers/bytes.ts";
import { MANIFEST_CONTENT_TYPE } from "../../src/client/sdk/types.ts";
import { pieceCidOfStream, sha256Cid } from "../../src/kernel/piece_cid/mod.ts";
import type { SweepReport } from "../../src/ops/gc.ts";
import type { PieceStore } from "../../src/driver/driver.ts";
import { withOverrides } from "../helpers/overrides.ts";
import { CAR_TYPE, carOf, rawBlock } from "../helpers/ipfs.ts";
import { pieceCid } from "../../src/client/sdk/piece_cid.ts";
import { toRfc3339 } from "../../src/kernel/clock.ts";
import { manifestOf } from "../helpers/manifests.ts";

export const DAY_MS = 86_400_000;

/** The sha2-256 CIDv1 of bytes: a cid the server checks the bytes against. */
export async function cidOf(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return sha256Cid(await sha256(bytes));
}
/** Every server of the suite: deals of 10 days, kept 2 days after they end. */
export const LIFECYCLE_ARGS = [
  "--token-term-days",
  "10",
  "--sponsored-term-days",
  "10",
  "--retention-grace-days",
  "2",
  "--gc-rate",
  "100000",
];

export type StartServer = (
  options: { clock: FakeClock; args: string[]; wrapStore?: (store: PieceStore) => PieceStore },
) => Promise<TestServer>;

interface Deal {
  dealId: string;
  cid: string;
  state: string;
  deletedAt: string | null;
  termEndsAt: string;
}

interface UploadOptions {
  contentType?: string;
  /** Default: the sha2-256 CIDv1 of the bytes. */
  cid?: string;
}

/** An upload the server must accept (sponsored, without a token in `headers`); its deal. */
export async function uploadOk(
  server: TestServer,
  bytes: Uint8Array<ArrayBuffer>,
  options: UploadOptions & { headers?: Record<string, string> } = {},
): Promise<Deal> {
  const response = await server.upload(options.cid ?? await cidOf(bytes), bytes, options);
  assertEquals(response.status, 200, await response.clone().text());
  return await response.json();
}

/** A user of the server: uploads, lists, extends and deletes as its token allows. */
export class User {
  constructor(readonly server: TestServer, readonly token: string) {}

  static async signUp(server: TestServer, email: string): Promise<User> {
    return new User(server, (await signup(server, { email })).token);
  }

  upload(bytes: Uint8Array<ArrayBuffer>, options: UploadOptions = {}): Promise<Deal> {
    return uploadOk(this.server, bytes, { ...options, headers: bearer(this.token) });
  }

  async files(state?: string): Promise<Deal[]> {
    const query = state === undefined ? "" : `?state=${state}`;
    const response = await this.server.get(`/api/files${query}`, { headers: bearer(this.token) });
    assertEquals(response.status, 200);
    return (await response.json()).files;
  }

  async deal(dealId: string): Promise<Deal> {
    const found = (await this.files()).find((deal) => deal.dealId === dealId);
    assertOk(found, dealId);
    return found;
  }

  deleteDeal(dealId: string): Promise<Response> {
    return this.server.get(`/api/deals/${dealId}`, {
      method: "DELETE",
      headers: bearer(this.token),
    });
  }

  extendDeal(dealId: string): Promise<Response> {
    return this.server.get(`/api/deals/${dealId}/extend`, {
      method: "POST",
      headers: bearer(this.token),
    });
  }
}

/** GET /p/{cid}: the status, and the bytes or the error code. */
export async function retrieve(server: TestServer, cid: string) {
  const response = await server.get(`/p/${cid}`);
  if (response.status !== 200) {
    return { status: response.status, error: (await errorOf(response)).error };
  }
  return { status: 200, bytes: new Uint8Array(await response.arrayBuffer()) };
}

/** One sweep of the server's own, judged at the server clock's now. */
export async function sweep(server: TestServer): Promise<SweepReport> {
  const report = await server.server.gc.sweep();
  assertOk(report !== null, "the sweep ran");
  return report;
}

/**
 * A split file as the SDK writes it: its pieces (named by PieceCIDv2, as a
 * manifest requires) and the manifest's bytes.
 */
export async function splitFile(seed: number) {
  const bytes = [seededBytes(3000, seed), seededBytes(2000, seed + 1)];
  const cids = await Promise.all(
    bytes.map(async (b) => (await pieceCidOfStream(ReadableStream.from([b]))).cid),
  );
  const parts = bytes.map((b, i) => ({ bytes: b, cid: cids[i] }));
  const manifest = await manifestOf("file.bin", parts);
  return { parts, manifest };
}

export function runLifecycleSuite(
  name: string,
  start: StartServer,
  options: { ignore?: boolean } = {},
): void {
  const test = (title: string, fn: (server: TestServer, clock: FakeClock) => Promise<void>) =>
    Deno.test({
      name: `lifecycle (${name}): ${title}`,
      ignore: options.ignore,
      fn: async () => {
        const clock = new FakeClock("2026-11-21T12:00:00Z");
        await using server = await start({ clock, args: LIFECYCLE_ARGS });
        await fn(server, clock);
      },
    });

  test(
    "a deal is active, then expired; its piece stays the grace period, then is 410 gone",
    async (server, clock) => {
      const user = await User.signUp(server, "a@example.org");
      const bytes = seededBytes(5000, 1);
      const deal = await user.upload(bytes);
      assertEquals((await user.deal(deal.dealId)).state, "active");
      clock.advance(10 * DAY_MS);
      assertEquals((await user.deal(deal.dealId)).state, "expired");
      assertEquals((await user.files("expired")).map((d) => d.dealId), [deal.dealId]);
      assertEquals(await user.files("active"), []);
      clock.advance(2 * DAY_MS - 1000);
      assertEquals((await sweep(server)).removedPieces, 0, "within the grace period");
      assertEquals((await retrieve(server, deal.cid)).status, 200);
      clock.advance(1000);
      const report = await sweep(server);
      assertEquals([report.removedPieces, report.removedBytes], [1, 5000]);
      assertEquals(await retrieve(server, deal.cid), { status: 410, error: "gone" });
      const head = await server.get(`/p/${deal.cid}`, { method: "HEAD" });
      assertEquals(head.status, 410);
      assertEquals(await server.server.store.stat(deal.cid), null, "its bytes are gone");
      assertEquals((await user.deal(deal.dealId)).state, "expired", "the deal shows as it was");
    },
  );

  test(
    "a deleted deal ends at once; its piece goes a grace period after the deletion",
    async (server, clock) => {
      const user = await User.signUp(server, "a@example.org");
      const deal = await user.upload(seededBytes(4000, 2));
      clock.advance(DAY_MS);
      const deleted = await user.deleteDeal(deal.dealId);
      assertEquals(deleted.status, 200);
      const body = await deleted.json();
      assertEquals([body.state, body.deletedAt], ["deleted", "2026-11-22T12:00:00Z"]);
      clock.advance(2 * DAY_MS - 1000);
      assertEquals((await sweep(server)).removedPieces, 0);
      assertEquals((await retrieve(server, deal.cid)).status, 200, "public until removed");
      clock.advance(1000);
      assertEquals((await sweep(server)).removedPieces, 1);
      assertEquals((await retrieve(server, deal.cid)).status, 410);
      assertEquals((await user.files("deleted")).map((d) => d.dealId), [deal.dealId]);
    },
  );

  test("a piece two deals share stays while either is active", async (server, clock) => {
    const [alice, bob] = await Promise.all([
      User.signUp(server, "alice@example.org"),
      User.signUp(server, "bob@example.org"),
    ]);
    const bytes = seededBytes(3000, 3);
    const first = await alice.upload(bytes);
    clock.advance(5 * DAY_MS);
    const second = await bob.upload(bytes);
    assertEquals((await alice.deleteDeal(first.dealId)).status, 200);
    clock.advance(5 * DAY_MS + 2 * DAY_MS + 1000); // alice's ended a week ago; bob's runs
    assertEquals((await sweep(server)).removedPieces, 0);
    assertEquals((await retrieve(server, first.cid)).status, 200);
    clock.advance(5 * DAY_MS); // bob's term ended 5 days ago
    assertEquals((await sweep(server)).removedPieces, 1);
    assertEquals((await retrieve(server, second.cid)).status, 410);
  });

  test("an active manifest deal keeps the pieces it lists", async (server, clock) => {
    const user = await User.signUp(server, "a@example.org");
    const { parts, manifest } = await splitFile(10);
    const pieceDeals = [];
    for (const part of parts) pieceDeals.push(await user.upload(part.bytes, { cid: part.cid }));
    const manifestDeal = await user.upload(manifest, { contentType: MANIFEST_CONTENT_TYPE });
    // Only the manifest's deal is extended: it now ends 10 days after the pieces' deals.
    assertEquals((await user.extendDeal(manifestDeal.dealId)).status, 200);
    clock.advance(10 * DAY_MS + 2 * DAY_MS + 1000);
    assertEquals(
      (await Promise.all(pieceDeals.map((d) => user.deal(d.dealId)))).map((d) => d.state),
      ["expired", "expired"],
    );
    assertEquals((await sweep(server)).removedPieces, 0, "the manifest keeps its pieces");
    for (const deal of pieceDeals) assertEquals((await retrieve(server, deal.cid)).status, 200);
    assertEquals((await user.deleteDeal(manifestDeal.dealId)).status, 200);
    clock.advance(2 * DAY_MS + 1000);
    const report = await sweep(server);
    assertEquals(report.removedPieces, 3, "the pieces and the manifest");
    for (const deal of [...pieceDeals, manifestDeal]) {
      assertEquals((await retrieve(server, deal.cid)).status, 410);
    }
  });

  test(
    "a manifest keeps only pieces its owner holds a deal on; a sponsored one keeps none",
    async (server, clock) => {
      const owner = await User.signUp(server, "owner@example.org");
      const other = await User.signUp(server, "other@example.org");
      const { parts, manifest } = await splitFile(20);
      const ownerDeals = [];
      for (const part of parts) ownerDeals.push(await owner.upload(part.bytes, { cid: part.cid }));
      // Another user's manifest, and a sponsored one, list the owner's pieces.
      const othersManifest = await other.upload(manifest, { contentType: MANIFEST_CONTENT_TYPE });
      assertEquals((await other.extendDeal(othersManifest.dealId)).status, 200);
      const { manifest: sponsoredManifest } = await splitFile(20);
      await uploadOk(server, sponsoredManifest, {
        cid: "bafksponsoredmanifest",
        contentType: MANIFEST_CONTENT_TYPE,
      });
      // The owner deletes their deals: the grace passes, and nothing else keeps the pieces.
      for (const deal of ownerDeals) {
        assertEquals(
          (await owner.deleteDeal(deal.dealId)).status,
          200,
        );
      }
      clock.advance(2 * DAY_MS + 1000);
      assertEquals((await sweep(server)).removedPieces, 2, "the owner's pieces, not the manifests");
      for (const deal of ownerDeals) assertEquals((await retrieve(server, deal.cid)).status, 410);
      assertEquals((await retrieve(server, othersManifest.cid)).status, 200);
    },
  );

  test(
    "an upload of a removed piece's bytes stores it again, as a new deal",
    async (server, clock) => {
      const user = await User.signUp(server, "a@example.org");
      const bytes = seededBytes(6000, 4);
      const old = await user.upload(bytes);
      clock.advance(12 * DAY_MS + 1000);
      assertEquals((await sweep(server)).removedPieces, 1);
      assertEquals((await retrieve(server, old.cid)).status, 410);
      const again = await user.upload(bytes);
      assertOk(again.dealId !== old.dealId);
      assertEquals(await retrieve(server, old.cid), { status: 200, bytes });
      assertEquals((await user.deal(again.dealId)).state, "active");
      assertEquals((await user.deal(old.dealId)).state, "expired");
      // The old deal's end long past, the new one keeps the piece through sweeps.
      assertEquals((await sweep(server)).removedPieces, 0);
      assertEquals((await retrieve(server, old.cid)).status, 200);
    },
  );

  test(
    "a CAR's blocks are served while its piece is stored: removed with it, back with a re-upload",
    async (server, clock) => {
      const [shared, onlyFirst, onlySecond] = await Promise.all(
        [20, 21, 22].map((seed) => rawBlock(seededBytes(1500, seed))),
      );
      const firstCar = await carOf([onlyFirst.cid], [shared, onlyFirst]);
      const secondCar = await carOf([onlySecond.cid], [shared, onlySecond]);
      const uploadCar = async (car: Uint8Array<ArrayBuffer>) =>
        await uploadOk(server, car, { cid: (await pieceCid(car)).cid, contentType: CAR_TYPE });
      const block = async (cid: unknown): Promise<{ status: number; [k: string]: unknown }> => {
        const response = await server.get(`/ipfs/${cid}?format=raw`);
        return response.status === 200
          ? { status: 200, bytes: new Uint8Array(await response.arrayBuffer()) }
          : { status: response.status, error: (await errorOf(response)).error };
      };
      const first = await uploadCar(firstCar);
      // A raw upload under its sha2-256 cid is a block of its own, with no index row.
      const rawBytes = seededBytes(900, 23);
      const rawPiece = await uploadOk(server, rawBytes);
      assertEquals(await block(rawPiece.cid), { status: 200, bytes: rawBytes });
      clock.advance(5 * DAY_MS);
      await uploadCar(secondCar); // its deal ends 5 days after the first's
      clock.advance(5 * DAY_MS + 2 * DAY_MS + 1000);
      // The first step of a removal alone, as a sweep killed right after it leaves it: the
      // bytes are still stored, but neither /p/ nor /ipfs/ serves them any more.
      const { blocks, lifecycle } = server.server.metadata;
      const now = clock.now();
      const marked = await lifecycle.beginRemovals(
        [first.cid, rawPiece.cid],
        toRfc3339(now - 2 * DAY_MS),
        toRfc3339(now),
      );
      assertEquals(marked.length, 2);
      assertOk(await server.server.store.stat(rawPiece.cid) !== null);
      assertEquals(await blocks.countBlocks(first.cid), 0, "its index rows went with the mark");
      assertEquals(await retrieve(server, rawPiece.cid), { status: 410, error: "gone" });
      assertEquals(await block(onlyFirst.cid), { status: 404, error: "not_found" });
      assertEquals(await block(rawPiece.cid), { status: 404, error: "not_found" });
      assertEquals((await sweep(server)).resumed, 2, "the next sweep finishes both");
      assertEquals(await server.server.store.stat(rawPiece.cid), null);
      assertEquals(await block(rawPiece.cid), { status: 404, error: "not_found" });
      assertEquals((await server.get(`/ipfs/${onlyFirst.cid}?format=car`)).status, 404);
      // A block the second CAR holds too is still served, from it.
      assertEquals(await block(shared.cid), { status: 200, bytes: shared.bytes });
      assertEquals(await block(onlySecond.cid), { status: 200, bytes: onlySecond.bytes });
      await uploadCar(firstCar);
      assertEquals(await blocks.countBlocks(first.cid), 2, "indexed again");
      assertEquals(await block(onlyFirst.cid), { status: 200, bytes: onlyFirst.bytes });
    },
  );

  test(
    "an expired deal extended in its grace period is active again; once removed, 410",
    async (server, clock) => {
      const user = await User.signUp(server, "a@example.org");
      const deal = await user.upload(seededBytes(2000, 5));
      clock.advance(11 * DAY_MS);
      const extended = await user.extendDeal(deal.dealId);
      assertEquals(extended.status, 200);
      assertEquals((await extended.json()).state, "active");
      clock.advance(10 * DAY_MS + 2 * DAY_MS);
      assertEquals((await sweep(server)).removedPieces, 1);
      const late = await user.extendDeal(deal.dealId);
      assertEquals([late.status, (await errorOf(late)).error], [410, "gone"]);
      const deleted = await user.deleteDeal(deal.dealId);
      assertEquals((await deleted.json()).state, "deleted");
      const afterDelete = await user.extendDeal(deal.dealId);
      assertEquals([afterDelete.status, (await errorOf(afterDelete)).error], [410, "gone"]);
    },
  );

  test(
    "orphans are listed by a dry run and removed once older than the grace period",
    async (server, clock) => {
      const { store } = server.server;
      const staged = await store.stage(ReadableStream.from([seededBytes(700, 6)]), {
        expectedBytes: 700,
      });
      await staged.commit("bafkorphan0001");
      clock.set(new Date(Date.now() + DAY_MS).toISOString());
      const young = await server.server.gc.sweep({ dryRun: true });
      assertEquals([young?.removedOrphans, young?.youngOrphans], [0, 1]);
      clock.advance(2 * DAY_MS);
      const listed: string[] = [];
      const dry = await server.server.gc.sweep({
        dryRun: true,
        onRemoved: (r) => listed.push(`${r.cid} ${r.size} ${r.orphan}`),
      });
      assertEquals([dry?.removedOrphans, listed], [1, ["bafkorphan0001 700 true"]]);
      assertEquals((await store.stat("bafkorphan0001"))?.size, 700, "a dry run removes nothing");
      const report = await sweep(server);
      assertEquals([report.removedOrphans, report.removedOrphanBytes], [1, 700]);
      assertEquals(await store.stat("bafkorphan0001"), null);
    },
  );

  test(
    "a sweep and an upload of the same cid, in a loop, always end with the piece stored",
    async (_, clock) => {
      // The upload of bytes already stored decides "stored: add a deal", discards its staged
      // copy, then commits the deal. Right at that discard a sweep starts, and the upload goes
      // on only once the sweep deleted the bytes, or (with the cid lock held) after some turns.
      const race = new SweepAtDiscard();
      await using server = await start({ clock, args: LIFECYCLE_ARGS, wrapStore: race.wrap });
      race.sweep = () => sweep(server);
      const bytes = seededBytes(20_000, 7);
      const cid = await cidOf(bytes);
      const outcomes = new Set<string>();
      for (let round = 0; round < 20; round++) {
        await uploadOk(server, bytes);
        clock.advance(12 * DAY_MS + 1000); // every deal on it ended past the grace period
        race.armed = round % 2 === 0; // odd rounds: both at once, as they come
        const [report] = await Promise.all([
          race.armed ? race.swept : sweep(server),
          uploadOk(server, bytes),
        ]);
        outcomes.add(
          report.keptOnRecheck > 0
            ? "judged removable, kept on re-check under the lock"
            : report.removedPieces === 1
            ? "removed, then stored again"
            : "kept",
        );
        assertEquals(await retrieve(server, cid), { status: 200, bytes }, `round ${round}`);
        assertEquals((await server.server.store.stat(cid))?.size, bytes.length);
      }
      // The race happened: a sweep judged the piece removable, and its re-check under the cid
      // lock saw the deal the upload made meanwhile (without the lock, the upload answers 200
      // for bytes the sweep deletes: retrieval is 410, and the round fails above).
      assertOk(
        outcomes.has("judged removable, kept on re-check under the lock"),
        [...outcomes].join(),
      );
    },
  );
}

/**
 * A store whose staged pieces start a sweep when discarded (armed), and hold
 * the discard until that sweep deleted a piece, or 300 ms of event-loop turns
 * passed: the widest window between an upload's "already stored" and its
 * deal's commit.
 */
class SweepAtDiscard {
  armed = false;
  sweep: () => Promise<SweepReport> = () => Promise.reject(new Error("no server"));
  #swept = Promise.withResolvers<SweepReport>();
  #deleted = Promise.withResolvers<void>();

  get swept(): Promise<SweepReport> {
    return this.#swept.promise;
  }

  wrap = (store: PieceStore): PieceStore =>
    withOverrides(store, {
      delete: (key) => {
        this.#deleted.resolve();
        return store.delete(key);
      },
      stage: async (body, options) => {
        const staged = await store.stage(body, options);
        return withOverrides(staged, {
          discard: async () => {
            if (this.armed) await this.#sweepNow();
            return staged.discard();
          },
        });
      },
    });

  async #sweepNow(): Promise<void> {
    this.armed = false;
    this.#deleted = Promise.withResolvers<void>();
    const swept = this.#swept;
    this.#swept = Promise.withResolvers<SweepReport>();
    this.sweep().then(swept.resolve, swept.reject);
    // Turns of the event loop for up to 300 ms: time for the sweep to judge the piece and
    // reach its lock (a few round trips to PostgreSQL), not a wait for an answer.
    const until = performance.now() + 300;
    const someTurns = (async () => {
      while (performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 0));
    })();
    await Promise.race([this.#deleted.promise, someTurns]);
  }
}
