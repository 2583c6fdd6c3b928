/** GET/HEAD /p/{cid}: every header of the contract, conditional requests, errors, CORS, routing. */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import type { TestServer, TestServerOptions } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const CID = "bafkretrieval01";
const EXPOSED = [
  "Content-Disposition",
  "Content-Length",
  "ETag",
  "X-Service-Piece-Cid",
  "X-Service-Source",
];

async function withPiece(
  fn: (server: TestServer) => Promise<void>,
  init: { contentType?: string; filename?: string } = {},
  options: TestServerOptions = {},
) {
  await using server = await startTestServer(options);
  const response = await server.upload(CID, "<h1>hello</h1>", {
    contentType: init.contentType ?? "text/html; charset=UTF-8",
    filename: init.filename,
  });
  assertEquals(response.status, 200);
  await response.body?.cancel();
  await fn(server);
}

/** Header `name` of GET /p/{cid}, the piece stored as `init` says. */
async function pieceHeader(
  name: string,
  init: { contentType?: string; filename?: string } = {},
): Promise<string | null> {
  let value: string | null = null;
  await withPiece(async (server) => {
    const response = await server.get(`/p/${CID}`);
    await response.body?.cancel();
    value = response.headers.get(name);
  }, init);
  return value;
}

Deno.test("retrieval: GET sends the bytes with every header of the contract", async () => {
  await withPiece(async (server) => {
    const response = await server.get(`/p/${CID}`);
    assertEquals(response.status, 200);
    assertEquals(await response.text(), "<h1>hello</h1>");
    const h = response.headers;
    assertEquals(h.get("content-type"), "text/html; charset=UTF-8");
    assertEquals(h.get("content-length"), "14");
    assertEquals(
      h.get("content-disposition"),
      "inline; filename=\"report.html\"; filename*=UTF-8''report.html",
    );
    assertEquals(h.get("cache-control"), "public, max-age=3600");
    assertEquals(h.get("x-service-piece-cid"), CID);
    assertEquals(h.get("x-service-source"), "stage");
    assertEquals(h.get("access-control-allow-origin"), "*");
    assertEquals(h.get("etag"), `"${CID}"`);
    assertEquals(h.get("accept-ranges"), "bytes");
    assertEquals(h.get("x-content-type-options"), "nosniff");
    assertEquals(h.get("content-security-policy"), "sandbox");
    for (const name of EXPOSED) {
      assertMatch(h.get("access-control-expose-headers")!, new RegExp(`\\b${name}\\b`));
    }
  }, { filename: "report.html" });
});

Deno.test("retrieval: Content-Type is returned verbatim, odd casing and parameters included", async () => {
  assertEquals(
    await pieceHeader("content-type", { contentType: 'Text/Plain;Charset="utf-8";x=1' }),
    'Text/Plain;Charset="utf-8";x=1',
  );
});

Deno.test("retrieval: without a filename Content-Disposition is plain inline", async () => {
  assertEquals(await pieceHeader("content-disposition"), "inline");
});

Deno.test("retrieval: a non-ASCII or quoted filename gets an ASCII fallback and filename*", async () => {
  assertEquals(
    await pieceHeader("content-disposition", { filename: encodeURIComponent('résumé "v2".pdf') }),
    `inline; filename="r_sum_ _v2_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf`,
  );
});

Deno.test("retrieval: HEAD has GET's headers and no body", async () => {
  await withPiece(async (server) => {
    const get = await server.get(`/p/${CID}`);
    await get.body?.cancel();
    const head = await server.get(`/p/${CID}`, { method: "HEAD" });
    assertEquals(head.status, 200);
    assertEquals(await head.text(), "");
    for (const [name, value] of get.headers) {
      if (name === "date") continue;
      assertEquals(head.headers.get(name), value, name);
    }
  });
});

Deno.test("retrieval: If-None-Match with the ETag is 304 without a body", async () => {
  await withPiece(async (server) => {
    for (const tag of [`"${CID}"`, `W/"${CID}"`, `"other", "${CID}"`, "*"]) {
      const response = await server.get(`/p/${CID}`, { headers: { "if-none-match": tag } });
      assertEquals(response.status, 304, tag);
      assertEquals(await response.text(), "");
      assertEquals(response.headers.get("etag"), `"${CID}"`);
      assertEquals(response.headers.get("cache-control"), "public, max-age=3600");
      assertEquals(response.headers.get("access-control-allow-origin"), "*");
    }
    const stale = await server.get(`/p/${CID}`, { headers: { "if-none-match": '"other"' } });
    assertEquals(stale.status, 200);
    await stale.body?.cancel();
  });
});

Deno.test("retrieval: the cid is matched case-insensitively", async () => {
  await withPiece(async (server) => {
    const response = await server.get(`/p/${CID.toUpperCase()}`);
    assertEquals(response.status, 200);
    assertEquals(response.headers.get("x-service-piece-cid"), CID);
    await response.body?.cancel();
  });
});

Deno.test("retrieval: a malformed cid is 400 invalid_cid as JSON", async () => {
  await using server = await startTestServer();
  for (const bad of ["short", "a".repeat(81), "bafk-dash-1234", "%00%00%00%00%00%00%00%00"]) {
    const response = await server.get(`/p/${bad}`);
    assertEquals(response.status, 400, bad);
    assertEquals(response.headers.get("content-type"), "application/json");
    assertEquals((await errorOf(response)).error, "invalid_cid");
  }
});

Deno.test("retrieval: an unknown cid is 404 not_found as JSON, never cached long", async () => {
  await using server = await startTestServer();
  const response = await server.get("/p/bafknothinghere");
  assertEquals(response.status, 404);
  assertEquals(response.headers.get("content-type"), "application/json");
  assertEquals(response.headers.get("cache-control"), "no-store");
  assertEquals(response.headers.get("access-control-allow-origin"), "*");
  assertEquals((await errorOf(response)).error, "not_found");
  const head = await server.get("/p/bafknothinghere", { method: "HEAD" });
  assertEquals(head.status, 404);
  assertEquals(await head.text(), "");
});

Deno.test("cors: OPTIONS on any route is a 204 preflight", async () => {
  await using server = await startTestServer();
  for (const path of ["/api/upload", "/p/bafkanything01", "/no/such/route"]) {
    const response = await server.get(path, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, x-filename",
      },
    });
    assertEquals(response.status, 204, path);
    assertEquals(response.headers.get("access-control-allow-origin"), "*");
    assertMatch(response.headers.get("access-control-allow-methods")!, /POST/);
    const allowed = response.headers.get("access-control-allow-headers")!.toLowerCase();
    for (const h of ["authorization", "content-type", "x-filename"]) {
      assertMatch(allowed, new RegExp(h));
    }
    await response.body?.cancel();
  }
});

Deno.test("cors: upload results and errors carry Access-Control-Allow-Origin", async () => {
  await using server = await startTestServer();
  const ok = await server.upload("bafkcorsupload1", "x");
  assertEquals(ok.headers.get("access-control-allow-origin"), "*");
  await ok.body?.cancel();
  const bad = await server.upload("bad", "x");
  assertEquals(bad.headers.get("access-control-allow-origin"), "*");
  await bad.body?.cancel();
});

Deno.test("routing: an unknown route is 404 not_found and a wrong method 405 with Allow", async () => {
  await using server = await startTestServer();
  const missing = await server.get("/api/nothing");
  await assertErrorAnswer(missing, 404, "not_found");
  const wrong = await server.get("/api/upload");
  assertEquals(wrong.status, 405);
  assertEquals(wrong.headers.get("allow"), "POST, OPTIONS");
  assertEquals((await errorOf(wrong)).error, "method_not_allowed");
  const put = await server.get(`/p/${CID}`, { method: "PUT", body: "x" });
  assertEquals(put.status, 405);
  assertEquals(put.headers.get("allow"), "GET, HEAD, OPTIONS");
  await put.body?.cancel();
});

Deno.test("health: /healthz reports storage and database", async () => {
  await using server = await startTestServer();
  const response = await server.get("/healthz");
  assertEquals(response.status, 200);
  const body = await response.json();
  assertEquals(body.status, "ok");
  assertEquals(body.storage.ok, true);
  assertEquals(body.storage.source, "stage");
  assertEquals(body.database.ok, true);
  assertEquals(body.database.persistent, true);
});

Deno.test("logging: one line per request with method, route, status and ms, never the query", async () => {
  await using server = await startTestServer();
  const response = await fetch(`${server.url}/api/upload?cid=bafklogline001&token=secret-token`, {
    method: "POST",
    headers: { "content-type": "a/b" },
    body: "x",
  });
  await response.body?.cancel();
  const line = server.logs.find((l) => l.msg === "request")!;
  assertEquals(line.method, "POST");
  assertEquals(line.route, "/api/upload");
  assertEquals(line.status, 401);
  assertEquals(typeof line.ms, "number");
  assertEquals(JSON.stringify(server.logs).includes("secret-token"), false);
});

Deno.test("cache: a small piece served from memory has the same headers, HEAD and 304", async () => {
  await withPiece(async (server) => {
    const first = await server.get(`/p/${CID}`);
    const firstBody = await first.text();
    const second = await server.get(`/p/${CID}`);
    assertEquals(await second.text(), firstBody);
    for (const [name, value] of first.headers) {
      if (name !== "date") assertEquals(second.headers.get(name), value, name);
    }
    const head = await server.get(`/p/${CID}`, { method: "HEAD" });
    assertEquals([head.status, await head.text()], [200, ""]);
    assertEquals(head.headers.get("content-length"), "14");
    const notModified = await server.get(`/p/${CID}`, { headers: { "if-none-match": `"${CID}"` } });
    assertEquals(notModified.status, 304);
    assertEquals(notModified.headers.get("etag"), `"${CID}"`);
    await notModified.body?.cancel();
  }, { filename: "a.html" });
});

Deno.test("cache: a cached piece answers 503 once its store has gone, and 200 once it is back", async () => {
  await withPiece(
    async (server) => {
      await (await server.get(`/p/${CID}`)).body?.cancel(); // now cached
      const pieces = `${server.dataDir}/pieces`;
      const status = async () => {
        const response = await server.get(`/p/${CID}`);
        await response.body?.cancel();
        return response.status;
      };
      await Deno.rename(pieces, `${pieces}-away`);
      try {
        await eventually(async () => await status() === 503, "a 503 for the cached piece");
        const response = await server.get(`/p/${CID}`);
        await assertErrorAnswer(response, 503, "storage_offline");
      } finally {
        await Deno.rename(`${pieces}-away`, pieces);
      }
      await eventually(async () => await status() === 200, "a 200 for the cached piece again");
      assertEquals(await (await server.get(`/p/${CID}`)).text(), "<h1>hello</h1>");
    },
    {},
    { jobIntervals: { "store-probe": 20 } },
  );
});
