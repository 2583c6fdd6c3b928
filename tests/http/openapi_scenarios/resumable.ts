/**
 * Declared-codes scenarios (see scenario.ts) of resumable uploads (the tus
 * endpoint, /api/tus) and of deals on stored bytes (POST /api/deals).
 */
import { assertEquals } from "../../helpers/assert.ts";
import { patternBytes } from "../../helpers/server.ts";
import { pieceCidOf, uploadMetadata } from "../../helpers/tus_requests.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../../../src/kernel/manifest_format.ts";
import { sha256 } from "../../helpers/bytes.ts";
import { sha256Cid } from "../../../src/kernel/piece_cid/cid_codec.ts";
import type { Answer, Probe, SendInit } from "../openapi_probe.ts";
import { corrupted } from "./retrieval.ts";
import {
  afterStoring,
  bearer,
  chainDown,
  CID,
  jsonBodyScenarios,
  postJson,
  rawPost,
  tokenScenarios,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";
import { CAR_TYPE, linkedCar } from "../../helpers/ipfs.ts";

const TUS = { "tus-resumable": "1.0.0" };
const OFFSET_BODY = "application/offset+octet-stream";

/** A creation's headers: Upload-Length, Upload-Metadata (cid and filetype unless given). */
function creation(length: number, fields: Record<string, string> = {}): Record<string, string> {
  const metadata = { cid: CID, filetype: "text/plain", ...fields };
  return { ...TUS, "upload-length": String(length), "upload-metadata": uploadMetadata(metadata) };
}

function create(p: Probe, headers: Record<string, string>, init: SendInit = {}) {
  return p.send("POST", "/api/tus", { ...init, headers: { ...headers, ...init.headers } });
}

/** A sponsored upload of `length` bytes under CID, created; its path. */
async function created(p: Probe, length = 10, init: SendInit = {}): Promise<string> {
  const answer = await create(p, creation(length), init);
  assertEquals(answer.status, 201, answer.body);
  return new URL(answer.headers.get("location")!).pathname;
}

function patch(p: Probe, path: string, offset: number, body: string, headers = {}) {
  return p.send("PATCH", path, {
    headers: { ...TUS, "content-type": OFFSET_BODY, "upload-offset": String(offset), ...headers },
    body,
  });
}

/** A creation sent by hand: head lines, then a body that may stop short. */
function rawCreation(p: Probe, body: string, options: { closeWrite?: boolean } = {}) {
  const head = Object.entries(creation(100)).map(([name, value]) => `${name}: ${value}\n`).join(
    "",
  );
  return p.raw(
    rawPost("/api/tus", `${head}Content-Type: ${OFFSET_BODY}\nContent-Length: 100\n`),
    { body, closeWrite: options.closeWrite },
  );
}

const UNKNOWN = "/api/tus/0123456789abcdef0123456789abcdef";

/** A well-formed manifest of one piece that nobody stored. */
function missingPieceManifest(): Uint8Array<ArrayBuffer> {
  return serializeManifest({
    format: "storage-manifest",
    version: 1,
    name: "a.bin",
    contentType: "application/octet-stream",
    size: 6,
    sha256: "0".repeat(64),
    pieces: [{ cid: pieceCidOf(new TextEncoder().encode("nobody")), size: 6 }],
  });
}

export const scenarios: Record<string, Scenario[]> = {
  createResumableUpload: [
    { name: "a sponsored creation", send: (p) => create(p, creation(10)), status: 201 },
    {
      name: "a creation that carries the whole file",
      send: (p) =>
        create(p, creation(5), { headers: { "content-type": OFFSET_BODY }, body: "hello" }),
      status: 201,
    },
    chainDown(
      "a wallet token, its chain down",
      (p, auth) => create(p, { ...creation(5), ...auth }),
    ),
    {
      name: "no Tus-Resumable",
      send: (p) => p.send("POST", "/api/tus", { headers: { "upload-length": "5" } }),
      status: 412,
      code: "unsupported_version",
    },
    {
      name: "no Upload-Length",
      send: (p) => create(p, { ...TUS, "upload-metadata": uploadMetadata({ cid: CID }) }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "Upload-Length: 0",
      send: (p) => create(p, creation(0)),
      status: 400,
      code: "empty_bodyy",
    },
    {
      name: "no cid in Upload-Metadata",
      send: (p) =>
        create(p, {
          ...TUS,
          "upload-length": "5",
          "upload-metadata": uploadMetadata({ filetype: "text/plain" }),
        }),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "no filetype in Upload-Metadata",
      send: (p) =>
        create(p, {
          ...TUS,
          "upload-length": "5",
          "upload-metadata": uploadMetadata({ cid: CID }),
        }),
      status: 400,
      code: "invalid_content_type",
    },
    {
      name: "a filename with a control character",
      send: (p) => create(p, creation(5, { filename: "a\u0007b" })),
      status: 400,
      code: "invalid_filename",
    },
    ...tokenScenarios("POST", "/api/tus", {
      scope: "put",
      body: () => ({ headers: creation(5) }),
    }).filter((s) => s.name !== "no token"),
    {
      name: "bytes sent with the creation as another type",
      send: (p) => create(p, creation(5), { headers: { "content-type": "text/plain" }, body: "x" }),
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "a PieceCIDv2 of another length",
      send: (p) => create(p, creation(7, { cid: pieceCidOf(new TextEncoder().encode("hello")) })),
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "the whole file as a CAR of more blocks than the tier's block cap",
      args: ["--sponsored-car-max-blocks", "2"],
      send: async (p) => {
        const { car } = await linkedCar(2);
        return create(p, creation(car.length, { filetype: CAR_TYPE }), {
          headers: { "content-type": OFFSET_BODY },
          body: car,
        });
      },
      status: 413,
      code: "too_many_blocks",
    },
    {
      name: "a length over the per-file cap",
      args: ["--sponsored-max-file-size", "1KiB"],
      send: (p) => create(p, creation(1025)),
      status: 413,
      code: "too_large",
    },
    {
      name: "past the unfinished uploads one address may hold",
      args: ["--sponsored-tus-max-open", "1"],
      send: async (p) => {
        await created(p, 10);
        return create(p, creation(10));
      },
      status: 429,
      code: "too_many_uploads",
    },
    {
      name: "a length past the sponsored daily cap",
      args: ["--sponsored-daily-cap", "1KiB"],
      send: async (p) => {
        await created(p, 1000);
        return create(p, creation(100));
      },
      status: 429,
      code: "rate_limited",
    },
    {
      name: "a length past the token's daily quota",
      send: async (p) => {
        const auth = bearer(await p.token({ quotaMb: 1 }));
        return create(p, { ...creation(1024 * 1024 + 1), ...auth });
      },
      status: 429,
      code: "quota_exceeded",
    },
    {
      name: "bytes with the creation that end before their Content-Length",
      send: (p) => rawCreation(p, "x".repeat(50), { closeWrite: true }),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "bytes with the creation that stall",
      args: ["--body-idle-timeout", "1"],
      send: (p) => rawCreation(p, "x".repeat(50)),
      status: 408,
      code: "request_timeout",
    },
    {
      name: "the whole file as a CAR that is not one",
      send: (p) =>
        create(p, creation(16, { filetype: "application/vnd.ipld.car" }), {
          headers: { "content-type": OFFSET_BODY },
          body: "not a CAR at all",
        }),
      status: 400,
      code: "invalid_car",
    },
    afterStoring(
      "the whole file, other bytes than those stored under the cid",
      "first",
      (p) => create(p, creation(6), { headers: { "content-type": OFFSET_BODY }, body: "second" }),
      "409 cid_conflict",
    ),
    {
      name: "a manifest over its size limit",
      send: (p) => create(p, creation(17 * 1024 * 1024, { filetype: MANIFEST_CONTENT_TYPE })),
      status: 400,
      code: "invalid_manifest",
    },
    {
      name: "a whole manifest that lists a piece nobody stored",
      send: (p) => {
        const manifest = missingPieceManifest();
        return create(p, creation(manifest.length, { filetype: MANIFEST_CONTENT_TYPE }), {
          headers: { "content-type": OFFSET_BODY },
          body: manifest,
        });
      },
      status: 400,
      code: "manifest_incomplete",
    },
    {
      name: "a store that refuses the upload (a file where its directory goes)",
      send: async (p) => {
        await Deno.writeTextFile(`${p.server.dataDir}/pieces/partial`, "in the way");
        return create(p, creation(5));
      },
      status: 502,
      code: "stage_failed",
    },
    wrongMethod("PUT", "/api/tus"),
  ],
  getResumableUpload: [
    {
      name: "a finished upload's result",
      send: async (p) => {
        const path = await created(p, 5);
        assertEquals((await patch(p, path, 0, "hello")).status, 204);
        return p.send("GET", path);
      },
      status: 200,
    },
    {
      name: "an upload still waiting for bytes",
      send: async (p) => p.send("GET", await created(p, 5)),
      status: 409,
      code: "upload_incomplete",
    },
    {
      name: "an unknown upload",
      send: (p) => p.send("GET", UNKNOWN),
      status: 404,
      code: "not_found",
    },
    ...tokenScenarios("GET", UNKNOWN, { scope: "put" }).filter((s) => s.name !== "no token"),
    wrongMethod("PUT", UNKNOWN),
  ],
  headResumableUpload: [
    {
      name: "an upload's offset",
      send: async (p) => p.send("HEAD", await created(p), { headers: TUS }),
      status: 200,
    },
    { name: "no Tus-Resumable", send: async (p) => p.send("HEAD", await created(p)), status: 412 },
    {
      name: "an unknown upload",
      send: (p) => p.send("HEAD", UNKNOWN, { headers: TUS }),
      status: 404,
    },
  ],
  appendToResumableUpload: [
    {
      name: "some bytes",
      send: async (p) => patch(p, await created(p, 10), 0, "hello"),
      status: 204,
    },
    {
      name: "the last bytes",
      send: async (p) => patch(p, await created(p, 5), 0, "hello"),
      status: 204,
    },
    {
      name: "no Tus-Resumable",
      send: async (p) =>
        p.send("PATCH", await created(p), {
          headers: { "content-type": OFFSET_BODY, "upload-offset": "0" },
          body: "x",
        }),
      status: 412,
      code: "unsupported_version",
    },
    {
      name: "a body of another type",
      send: async (p) => patch(p, await created(p), 0, "x", { "content-type": "text/plain" }),
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "no Upload-Offset",
      send: async (p) =>
        p.send("PATCH", await created(p), {
          headers: { ...TUS, "content-type": OFFSET_BODY },
          body: "x",
        }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "an unknown upload",
      send: (p) => patch(p, UNKNOWN, 0, "x"),
      status: 404,
      code: "not_found",
    },
    {
      name: "another offset than the upload's",
      send: async (p) => patch(p, await created(p), 3, "x"),
      status: 409,
      code: "offset_mismatch",
    },
    {
      name: "more bytes than the upload lacks",
      send: async (p) => patch(p, await created(p, 3), 0, "hello"),
      status: 413,
      code: "too_large",
    },
    {
      name: "last bytes that do not hash to the cid",
      send: async (p) => {
        const cid = sha256Cid(await sha256(new TextEncoder().encode("hello")));
        const answer = await create(p, creation(5, { cid }));
        return patch(p, new URL(answer.headers.get("location")!).pathname, 0, "jello");
      },
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "last bytes of a manifest that are not one",
      send: async (p) => {
        const answer = await create(p, creation(5, { filetype: MANIFEST_CONTENT_TYPE }));
        return patch(p, new URL(answer.headers.get("location")!).pathname, 0, "hello");
      },
      status: 400,
      code: "invalid_manifest",
    },
    {
      name: "last bytes of a manifest that lists a piece nobody stored",
      send: async (p) => {
        const manifest = new TextDecoder().decode(missingPieceManifest());
        const headers = creation(manifest.length, { filetype: MANIFEST_CONTENT_TYPE });
        const answer = await create(p, headers);
        return patch(p, new URL(answer.headers.get("location")!).pathname, 0, manifest);
      },
      status: 400,
      code: "manifest_incomplete",
    },
    {
      name: "bytes of a CAR of more blocks than the tier's block cap",
      args: ["--sponsored-car-max-blocks", "2"],
      send: async (p) => {
        const { car } = await linkedCar(2);
        const answer = await create(p, creation(car.length, { filetype: CAR_TYPE }));
        return p.send("PATCH", new URL(answer.headers.get("location")!).pathname, {
          headers: { ...TUS, "content-type": OFFSET_BODY, "upload-offset": "0" },
          body: car,
        });
      },
      status: 413,
      code: "too_many_blocks",
    },
    {
      name: "bytes of a CAR that is not one",
      send: async (p) => {
        const answer = await create(p, creation(100, { filetype: "application/vnd.ipld.car" }));
        // A header of one byte, which is no {version, roots} map: refused before the rest.
        return patch(p, new URL(answer.headers.get("location")!).pathname, 0, "\u0001x");
      },
      status: 400,
      code: "invalid_car",
    },
    {
      name: "a body that stalls",
      args: ["--body-idle-timeout", "1"],
      send: async (p) => {
        const path = await created(p, 100);
        const head = `Tus-Resumable: 1.0.0\nContent-Type: ${OFFSET_BODY}\nUpload-Offset: 0\n` +
          "Content-Length: 100\n";
        return p.raw(rawPost(path, head).replace(/^POST/, "PATCH"), { body: "x".repeat(50) });
      },
      status: 408,
      code: "request_timeout",
    },
    afterStoring(
      "last bytes other than those stored under the cid",
      "first",
      async (p) => patch(p, await created(p, 6), 0, "second"),
      "409 cid_conflict",
    ),
    {
      name: "an upload whose bytes an operator removed",
      send: async (p) => {
        const path = await created(p);
        await Deno.remove(`${p.server.dataDir}/pieces/partial/${path.split("/").at(-1)}`);
        return patch(p, path, 0, "x");
      },
      status: 502,
      code: "stage_failed",
    },
    ...tokenScenarios("PATCH", UNKNOWN, {
      scope: "put",
      body: () => ({ headers: { ...TUS, "content-type": OFFSET_BODY, "upload-offset": "0" } }),
    }).filter((s) => s.name !== "no token"),
    wrongMethod("POST", UNKNOWN),
  ],
  terminateResumableUpload: [
    {
      name: "an upload ended",
      send: async (p) => p.send("DELETE", await created(p), { headers: TUS }),
      status: 204,
    },
    {
      name: "no Tus-Resumable",
      send: async (p) => p.send("DELETE", await created(p)),
      status: 412,
      code: "unsupported_version",
    },
    {
      name: "an unknown upload",
      send: (p) => p.send("DELETE", UNKNOWN, { headers: TUS }),
      status: 404,
      code: "not_found",
    },
    ...tokenScenarios("DELETE", UNKNOWN, {
      scope: "put",
      body: () => ({ headers: TUS }),
    }).filter((s) => s.name !== "no token"),
    wrongMethod("PUT", UNKNOWN),
  ],
  createDeal: [
    afterStoring(
      "a cid someone stored",
      "stored",
      async (p) => dealOn(p, CID, bearer(await p.token())),
      "200",
    ),
    { name: "a cid nobody stored", send: (p) => dealOn(p, CID), status: 404, code: "not_found" },
    {
      name: "no cid",
      send: (p) => postJson(p, "/api/deals", {}),
      status: 400,
      code: "invalid_cid",
    },
    ...jsonBodyScenarios("/api/deals"),
    ...tokenScenarios("POST", "/api/deals", {
      scope: "put",
      body: () => ({ headers: { "content-type": "application/json" }, body: `{"cid":"${CID}"}` }),
    }).filter((s) => s.name !== "no token"),
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => dealOn(p, await corrupted(p)),
      status: 503,
      code: "piece_corrupt",
    },
    {
      name: "a piece past the sponsored daily cap",
      args: ["--sponsored-daily-cap", "1KiB"],
      send: async (p) => {
        assertEquals((await p.upload(CID, patternBytes(1000))).status, 200);
        return dealOn(p, CID);
      },
      status: 429,
      code: "rate_limited",
    },
    {
      name: "a piece past the token's daily quota",
      send: async (p) => {
        assertEquals((await p.upload(CID, patternBytes(1024 * 1024))).status, 200);
        const auth = bearer(await p.token({ quotaMb: 1 }));
        assertEquals((await p.upload("bafkfillsquota1", "x", { headers: auth })).status, 200);
        return dealOn(p, CID, auth);
      },
      status: 429,
      code: "quota_exceeded",
    },
    {
      name: "a piece over the per-file cap",
      args: ["--sponsored-max-file-size", "1KiB"],
      send: async (p) => {
        const auth = bearer(await p.token());
        assertEquals((await p.upload(CID, patternBytes(2000), { headers: auth })).status, 200);
        return dealOn(p, CID);
      },
      status: 413,
      code: "too_large",
    },
    chainDown("a wallet token, its chain down", async (p, auth) => {
      assertEquals((await p.upload(CID, "stored")).status, 200);
      return dealOn(p, CID, auth);
    }),
    wrongMethod("GET", "/api/deals"),
  ],
};

function dealOn(p: Probe, cid: string, headers: Record<string, string> = {}): Promise<Answer> {
  return postJson(p, "/api/deals", { cid }, headers);
}

export const outOfReach: OutOfReach = {
  createResumableUpload: {
    "507 insufficient_storage": "needs a full disk (as for uploads)",
    "503 server_busy": "needs bodies held in flight past --upload-memory (as for uploads)",
  },
  getResumableUpload: {
    "412 unsupported_version": "only HEAD reads Tus-Resumable, and a HEAD answer has no code",
    "423 upload_locked": "needs a request that holds the upload 15 s without letting go",
  },
  appendToResumableUpload: {
    "507 insufficient_storage": "needs a full disk (as for uploads)",
    "503 server_busy": "needs bodies held in flight past --upload-memory (as for uploads)",
    "429 rate_limited": "needs bodies held in flight past --max-uploads-per-client",
    "423 upload_locked": "needs a request that holds the upload 15 s without letting go",
  },
  terminateResumableUpload: {
    "423 upload_locked": "needs a request that holds the upload 15 s without letting go",
  },
};
