/**
 * Declared-codes scenarios (see scenario.ts) of the routes that read a body of
 * bytes: POST /api/upload and POST /api/piece-cids.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../../helpers/assert.ts";
import { shardOf } from "../../../src/driver/disk/layout.ts";
import { patternBytes } from "../../helpers/server.ts";
import type { Answer, Probe, RawInit } from "../openapi_probe.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../../../src/kernel/manifest_format.ts";
import {
  afterStoring,
  bearer,
  chainDown,
  CID,
  rawPost,
  tokenScenarios,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";
import { CAR_TYPE, linkedCar } from "../../helpers/ipfs.ts";

/** The real PieceCIDv2 of `bytes`, computed by the server. */
async function pieceCidOf(p: Probe, bytes: string): Promise<string> {
  const answer = await p.send("POST", "/api/piece-cids", {
    headers: bearer(await p.token()),
    body: bytes,
  });
  assertEquals(answer.status, 200, answer.body);
  return JSON.parse(answer.body).cid;
}

/** A raw POST /api/piece-cids with a fresh token and this Content-Length. */
async function rawPieceCids(p: Probe, contentLength: string, init: RawInit): Promise<Answer> {
  const head = `Authorization: Bearer ${await p.token()}\nContent-Length: ${contentLength}\n`;
  return await p.raw(rawPost("/api/piece-cids", head), init);
}

const uploadPath = `/api/upload?cid=${CID}`;

export const scenarios: Record<string, Scenario[]> = {
  upload: [
    chainDown("a wallet token, its chain down", (p, auth) => p.upload(CID, "x", { headers: auth })),
    { name: "a sponsored upload", send: (p) => p.upload(CID, "hello"), status: 200 },
    afterStoring(
      "the same bytes again under a stored cid",
      "hello",
      (p) => p.upload(CID, "hello"),
      "200",
    ),
    {
      name: "an upload with a token",
      send: async (p) => p.upload(CID, "hello", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "a missing cid",
      send: (p) => p.send("POST", "/api/upload", { body: "x" }),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "a 7-character cid",
      send: (p) => p.upload("abc1234", "x"),
      status: 400,
      code: "invalid_cid",
    },
    ...tokenScenarios("POST", uploadPath, {
      scope: "put",
      body: () => ({ headers: { "content-type": "text/plain" }, body: "hello" }),
    }).filter((s) => s.name !== "no token"),
    {
      name: "no Content-Length and no body",
      send: (p) => p.raw(rawPost(uploadPath, "Content-Type: text/plain\n")),
      status: 400,
      code: "no_body",
    },
    {
      name: "Content-Length: 0",
      send: (p) => p.upload(CID, new Uint8Array(0)),
      status: 400,
      code: "empty_bodyy",
    },
    {
      name: "a chunked body",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nTransfer-Encoding: chunked\n"), {
          body: "5\r\nhello\r\n0\r\n\r\n",
        }),
      status: 411,
      code: "length_required",
    },
    {
      name: "no Content-Type",
      send: (p) => p.raw(rawPost(uploadPath, "Content-Length: 5\n"), { body: "hello" }),
      status: 400,
      code: "invalid_content_type",
    },
    {
      name: "a multipart form body",
      send: (p) => {
        const form = new FormData();
        form.append("file", new Blob(["hello"]), "a.txt");
        return p.send("POST", uploadPath, { body: form });
      },
      status: 400,
      code: "invalid_content_type",
    },
    {
      name: "an X-Filename that does not URL-decode",
      send: (p) => p.upload(CID, "hello", { headers: { "x-filename": "%E0%A4%A" } }),
      status: 400,
      code: "invalid_filename",
    },
    {
      name: "a manifest that does not parse",
      send: (p) => p.upload(CID, "{}", { headers: { "content-type": MANIFEST_CONTENT_TYPE } }),
      status: 400,
      code: "invalid_manifest",
    },
    {
      name: "a manifest listing a piece that is not stored",
      send: async (p) => {
        const manifest = serializeManifest({
          format: "storage-manifest",
          version: 1,
          name: null,
          contentType: "text/plain",
          size: 5,
          sha256: "0".repeat(64),
          pieces: [{ cid: await pieceCidOf(p, "hello"), size: 5 }],
        });
        return p.upload(CID, manifest, { headers: { "content-type": MANIFEST_CONTENT_TYPE } });
      },
      status: 400,
      code: "manifest_incomplete",
    },
    {
      name: "a PieceCIDv2 of another size",
      send: async (p) => p.upload(await pieceCidOf(p, "hello"), "hello!"),
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "a PieceCIDv2 of other bytes of the same size",
      send: async (p) => p.upload(await pieceCidOf(p, "hello"), "jello"),
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "a body sent as a CAR that is not one",
      send: (p) =>
        p.upload(CID, "not a CAR at all", {
          headers: { "content-type": "application/vnd.ipld.car" },
        }),
      status: 400,
      code: "invalid_car",
    },
    {
      name: "a CAR of more blocks than the tier's block cap",
      args: ["--sponsored-car-max-blocks", "2"],
      send: async (p) =>
        p.upload(CID, (await linkedCar(2)).car, { headers: { "content-type": CAR_TYPE } }),
      status: 413,
      code: "too_many_blocks",
    },
    {
      name: "a file over the per-file cap",
      args: ["--sponsored-max-file-size", "1KiB"],
      send: (p) => p.upload(CID, new Uint8Array(1025)),
      status: 413,
      code: "too_large",
    },
    {
      name: "a file past the sponsored daily cap",
      args: ["--sponsored-daily-cap", "1KiB"],
      send: async (p) => {
        assertEquals((await p.upload("bafkfillscap01", new Uint8Array(1024))).status, 200);
        return p.upload(CID, "x");
      },
      status: 429,
      code: "rate_limited",
    },
    {
      name: "a file past the token's daily quota",
      send: async (p) => {
        const auth = bearer(await p.token({ quotaMb: 1 }));
        const full = await p.upload("bafkfillsquota1", patternBytes(1024 * 1024), {
          headers: auth,
        });
        assertEquals(full.status, 200, full.body);
        return p.upload(CID, "x", { headers: auth });
      },
      status: 429,
      code: "quota_exceeded",
    },
    {
      name: "a body that ends before its Content-Length",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 100\n"), {
          body: "x".repeat(50),
          closeWrite: true,
        }),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "a body that stalls",
      args: ["--body-idle-timeout", "1"],
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 100\n"), {
          body: "x".repeat(50),
        }),
      status: 408,
      code: "request_timeout",
    },
    {
      name: "a Content-Length past what a number holds exactly",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 9007199254740993\n"), {
          body: "x",
        }),
      status: 400,
      code: "invalid_request",
    },
    afterStoring(
      "other bytes under a stored cid",
      "first",
      (p) => p.upload(CID, "second"),
      "409 cid_conflict",
    ),
    {
      name: "a store that refuses the write (a directory where the piece goes)",
      send: async (p) => {
        await Deno.mkdir(`${p.server.dataDir}/pieces/${shardOf(CID)}/${CID}/blocker`, {
          recursive: true,
        });
        return p.upload(CID, "hello");
      },
      status: 502,
      code: "stage_failed",
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.upload(CID, "hello"),
      status: 503,
      code: "storage_offline",
    },
    {
      name: "a database locked by another process",
      args: ["--db-busy-timeout", "100"],
      send: async (p) => {
        const intruder = new DatabaseSync(`${p.server.dataDir}/storage.db`);
        intruder.exec("BEGIN EXCLUSIVE");
        try {
          return await p.upload(CID, "hello");
        } finally {
          intruder.exec("ROLLBACK");
          intruder.close();
        }
      },
      status: 503,
      code: "storage_offline",
    },
    wrongMethod("GET", uploadPath),
    wrongMethod("PUT", uploadPath),
  ],
  computePieceCid: [
    {
      name: "some bytes",
      send: async (p) =>
        p.send("POST", "/api/piece-cids", { headers: bearer(await p.token()), body: "hello" }),
      status: 200,
    },
    ...tokenScenarios("POST", "/api/piece-cids", {
      scope: "put",
      body: () => ({ body: "hello" }),
    }),
    {
      name: "no Content-Length and no body",
      send: async (p) =>
        p.raw(rawPost("/api/piece-cids", `Authorization: Bearer ${await p.token()}\n`)),
      status: 400,
      code: "no_body",
    },
    {
      name: "Content-Length: 0",
      send: async (p) =>
        p.send("POST", "/api/piece-cids", { headers: bearer(await p.token()), body: "" }),
      status: 400,
      code: "empty_bodyy",
    },
    {
      name: "a chunked body",
      send: async (p) =>
        p.raw(
          rawPost(
            "/api/piece-cids",
            `Authorization: Bearer ${await p.token()}\nTransfer-Encoding: chunked\n`,
          ),
          { body: "5\r\nhello\r\n0\r\n\r\n" },
        ),
      status: 411,
      code: "length_required",
    },
    {
      name: "a body over the token's per-file cap",
      args: ["--token-max-file-size", "1KiB"],
      send: async (p) =>
        p.send("POST", "/api/piece-cids", {
          headers: bearer(await p.token()),
          body: "x".repeat(1025),
        }),
      status: 413,
      code: "too_large",
    },
    {
      name: "a body that ends before its Content-Length",
      send: (p) => rawPieceCids(p, "100", { body: "x".repeat(50), closeWrite: true }),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "a body that stalls",
      args: ["--body-idle-timeout", "1"],
      send: (p) => rawPieceCids(p, "100", { body: "x".repeat(50) }),
      status: 408,
      code: "request_timeout",
    },
    {
      name: "a Content-Length past what a number holds exactly",
      send: (p) => rawPieceCids(p, "9007199254740993", { body: "x" }),
      status: 400,
      code: "invalid_request",
    },
    wrongMethod("PUT", "/api/piece-cids"),
  ],
};

export const outOfReach: OutOfReach = {
  upload: {
    "507 insufficient_storage":
      "needs a full disk (tests/storage/storage_faults_test.ts mounts a tmpfs)",
    "503 server_busy": "needs uploads held in flight past --upload-memory: " +
      "tests/http/hardening_test.ts holds one open",
  },
  computePieceCid: {
    "429 rate_limited": "needs bodies held in flight past --max-uploads-per-client: " +
      "tests/http/hardening_test.ts holds one open",
    "503 server_busy": "needs bodies held in flight past --upload-memory (as for uploads)",
  },
};
