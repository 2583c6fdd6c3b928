/**
 * Every row of the upload error table, as a scenario table against the real
 * server. Requests fetch cannot express (no Content-Length, chunked, cut-off
 * bodies) go over raw TCP.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { parseResponse, rawRequest, writeAll } from "../helpers/raw_http.ts";
import { storedPieces, tempFiles } from "../helpers/pieces.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

interface Scenario {
  name: string;
  send: (server: TestServer) => Promise<{ status: number; headers: Headers; body: string }>;
  status: number;
  error: string;
}

const CID = "bafkexamplecid01";
const port = (s: TestServer) => new URL(s.url).port;

async function viaFetch(promise: Promise<Response>) {
  const response = await promise;
  return { status: response.status, headers: response.headers, body: await response.text() };
}

async function viaRaw(server: TestServer, head: string, body?: string) {
  const response = await rawRequest(Number(port(server)), head, { body });
  if (!response) throw new Error("no response");
  return response;
}

const scenarios: Scenario[] = [
  {
    name: "a missing cid is 400 invalid_cid",
    send: (s) => viaFetch(fetch(`${s.url}/api/upload`, { method: "POST", body: "x" })),
    status: 400,
    error: "invalid_cid",
  },
  {
    name: "a 7-character cid is 400 invalid_cid",
    send: (s) => viaFetch(s.upload("abc1234", "x")),
    status: 400,
    error: "invalid_cid",
  },
  {
    name: "an 81-character cid is 400 invalid_cid",
    send: (s) => viaFetch(s.upload("a".repeat(81), "x")),
    status: 400,
    error: "invalid_cid",
  },
  {
    name: "a cid with punctuation is 400 invalid_cid",
    send: (s) => viaFetch(s.upload("bafk-abc-1234", "x")),
    status: 400,
    error: "invalid_cid",
  },
  {
    name: "no Content-Length and no body is 400 no_body",
    send: (s) =>
      viaRaw(
        s,
        `POST /api/upload?cid=${CID} HTTP/1.1\nHost: x\nContent-Type: text/plain\nConnection: close\n`,
      ),
    status: 400,
    error: "no_body",
  },
  {
    name: "Content-Length: 0 is 400 empty_bodyy",
    send: (s) => viaFetch(s.upload(CID, new Uint8Array(0))),
    status: 400,
    error: "empty_bodyy",
  },
  {
    name: "a chunked body is 411 length_required",
    send: (s) =>
      viaRaw(
        s,
        `POST /api/upload?cid=${CID} HTTP/1.1\nHost: x\nContent-Type: text/plain\nTransfer-Encoding: chunked\nConnection: close\n`,
        "5\r\nhello\r\n0\r\n\r\n",
      ),
    status: 411,
    error: "length_required",
  },
  {
    name: "a missing Content-Type is 400 invalid_content_type",
    send: (s) =>
      viaRaw(
        s,
        `POST /api/upload?cid=${CID} HTTP/1.1\nHost: x\nContent-Length: 5\nConnection: close\n`,
        "hello",
      ),
    status: 400,
    error: "invalid_content_type",
  },
  {
    name: "a Content-Type without a subtype is 400 invalid_content_type",
    send: (s) => viaFetch(s.upload(CID, "hello", { contentType: "text" })),
    status: 400,
    error: "invalid_content_type",
  },
  {
    name: "an X-Filename that does not URL-decode is 400 invalid_filename",
    send: (s) => viaFetch(s.upload(CID, "hello", { filename: "%E0%A4%A" })),
    status: 400,
    error: "invalid_filename",
  },
  {
    name: "an empty X-Filename is 400 invalid_filename",
    send: (s) =>
      viaRaw(
        s,
        `POST /api/upload?cid=${CID} HTTP/1.1\nHost: x\nContent-Type: text/plain\nX-Filename:\nContent-Length: 5\nConnection: close\n`,
        "hello",
      ),
    status: 400,
    error: "invalid_filename",
  },
  {
    name: "an X-Filename over 255 bytes is 400 invalid_filename",
    send: (s) => viaFetch(s.upload(CID, "hello", { filename: "%C3%A9".repeat(128) })),
    status: 400,
    error: "invalid_filename",
  },
  {
    name: "an X-Filename that decodes to CR/LF is 400 invalid_filename",
    send: (s) => viaFetch(s.upload(CID, "hello", { filename: "a%0D%0Ab.txt" })),
    status: 400,
    error: "invalid_filename",
  },
  ...[
    ["U+202E (right-to-left override)", "invoice%E2%80%AEfdp.exe"],
    ["U+2067 (right-to-left isolate)", "a%E2%81%A7b.txt"],
    ["U+200F (right-to-left mark)", "a%E2%80%8Fb.txt"],
    ["U+061C (Arabic letter mark)", "a%D8%9Cb.txt"],
    ["U+2028 (line separator)", "a%E2%80%A8b.txt"],
    ["U+2029 (paragraph separator)", "a%E2%80%A9b.txt"],
    ["U+200B (zero-width space)", "a%E2%80%8Bb.txt"],
    ["U+200D (zero-width joiner)", "a%E2%80%8Db.txt"],
    ["U+FEFF (zero-width no-break space)", "a%EF%BB%BFb.txt"],
  ].map(([what, filename]): Scenario => ({
    name: `an X-Filename with ${what} is 400 invalid_filename`,
    send: (s) => viaFetch(s.upload(CID, "hello", { filename })),
    status: 400,
    error: "invalid_filename",
  })),
  {
    name: "a garbage bearer token is 401 invalid_token",
    send: (s) =>
      viaFetch(s.upload(CID, "hello", { headers: { authorization: "Bearer not-a-token" } })),
    status: 401,
    error: "invalid_token",
  },
  {
    name: "a non-bearer Authorization header is 401 invalid_token",
    send: (s) => viaFetch(s.upload(CID, "hello", { headers: { authorization: "Basic dTpw" } })),
    status: 401,
    error: "invalid_token",
  },
  {
    name: "a garbage ?token= is 401 invalid_token",
    send: (s) =>
      viaFetch(
        fetch(`${s.url}/api/upload?cid=${CID}&token=nope`, {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: "hello",
        }),
      ),
    status: 401,
    error: "invalid_token",
  },
  {
    name: "a body that ends before Content-Length is 400 incomplete_body",
    send: async (s) => {
      // Half the body, then close our sending side: the server sees a short body.
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port(s)) });
      const head =
        `POST /api/upload?cid=${CID} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n`;
      await writeAll(conn, new TextEncoder().encode(head + "x".repeat(50)));
      await conn.closeWrite();
      return parseResponse(await new Response(conn.readable).text());
    },
    status: 400,
    error: "incomplete_body",
  },
  {
    name: "a file over the per-file cap is 413 too_large",
    send: (s) => viaFetch(s.upload(CID, new Uint8Array(1025))),
    status: 413,
    error: "too_large",
  },
  {
    name: "a file past the daily IP cap is 429 rate_limited",
    send: async (s) => {
      await s.upload("fillsthecap01", new Uint8Array(1024)).then((r) => r.body?.cancel());
      await s.upload("fillsthecap02", new Uint8Array(1024)).then((r) => r.body?.cancel());
      return viaFetch(s.upload(CID, new Uint8Array(1)));
    },
    status: 429,
    error: "rate_limited",
  },
];

for (const scenario of scenarios) {
  Deno.test(`upload: ${scenario.name}`, async () => {
    await using server = await startTestServer({
      args: ["--sponsored-max-file-size", "1KiB", "--sponsored-daily-cap", "2KiB"],
    });
    const response = await scenario.send(server);
    assertEquals(response.status, scenario.status, response.body);
    assertEquals(response.headers.get("content-type"), "application/json");
    const body = JSON.parse(response.body);
    assertEquals(body.error, scenario.error);
    assertEquals(typeof body.message, "string");
    assertMatch(body.message, /\S/, "a non-empty message");
    if (scenario.status === 401) {
      assertEquals(response.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
    }
    // Bad input leaves no trace: the only pieces are those the scenario stored on purpose.
    const pieces = await storedPieces(server.dataDir);
    assertEquals(pieces.length, scenario.error === "rate_limited" ? 2 : 0, pieces.join());
    assertEquals(await tempFiles(server.dataDir), []);
  });
}

Deno.test("upload: the joiners (emoji ZWJ, Persian ZWNJ) are zero-width too: refused; a name without them is kept", async () => {
  await using server = await startTestServer();
  const joined = "\u{1F468}\u200D\u{1F469} \u0645\u06CC\u200C\u062E.txt";
  const refused = await server.upload(CID, "hello", { filename: encodeURIComponent(joined) });
  assertEquals([refused.status, (await errorOf(refused)).error], [400, "invalid_filename"]);
  const plain = "\u{1F468} \u0645\u06CC\u062E.txt";
  const response = await server.upload(CID, "hello", { filename: encodeURIComponent(plain) });
  assertEquals(response.status, 200, await response.text());
  const served = await server.get(`/p/${CID}`);
  await served.body?.cancel();
  assertMatch(served.headers.get("content-disposition")!, /%F0%9F%91%A8/);
});

Deno.test("upload: checks run in order cid, auth, length, type, filename, caps", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "1KiB"] });
  const p = Number(port(server));
  const send = (query: string, headers: string, body = "") =>
    rawRequest(
      p,
      `POST /api/upload?${query} HTTP/1.1\nHost: x\nConnection: close\n${headers}`,
      { body },
    );
  const code = async (query: string, headers: string, body = "") =>
    JSON.parse((await send(query, headers, body))!.body).error;

  // A bad cid wins over everything else.
  assertEquals(
    await code("cid=bad", "Authorization: Bearer x\nTransfer-Encoding: chunked\n", "0\r\n\r\n"),
    "invalid_cid",
  );
  // Then the token, before any header of the body.
  assertEquals(
    await code(`cid=${CID}`, "Authorization: Bearer x\nTransfer-Encoding: chunked\n", "0\r\n\r\n"),
    "invalid_token",
  );
  // Then the length, before the type.
  assertEquals(await code(`cid=${CID}`, "Content-Length: 0\n"), "empty_bodyy");
  // Then the type, before the filename.
  assertEquals(
    await code(`cid=${CID}`, "Content-Length: 1\nX-Filename: %ZZ\n", "x"),
    "invalid_content_type",
  );
  // Then the filename, before the caps.
  assertEquals(
    await code(`cid=${CID}`, "Content-Type: a/b\nContent-Length: 5000\nX-Filename: %ZZ\n"),
    "invalid_filename",
  );
});

Deno.test("upload: an over-cap Content-Length is refused before the body is sent", async () => {
  // 100 MiB is the default sponsored cap; we send only the head of a 100 MiB + 1 upload.
  await using server = await startTestServer();
  const response = await rawRequest(
    Number(port(server)),
    `POST /api/upload?cid=${CID} HTTP/1.1\nHost: x\nContent-Type: a/b\nContent-Length: ${
      100 * 1024 * 1024 + 1
    }\nConnection: close\n`,
  );
  assertEquals(response?.status, 413);
  const refusal = JSON.parse(response!.body);
  assertEquals(refusal.error, "too_large");
  // A newcomer's next step: a token raises the cap, the CLI splits what is larger still.
  assertMatch(refusal.message, /a token \(storage signup\) raises it, and the storage CLI splits/);
});

Deno.test("upload: a storage path the store cannot write to is 502 stage_failed", async () => {
  await using server = await startTestServer();
  // Block the piece's final path with a directory: the commit's rename must fail.
  const { shardOf } = await import("../../src/driver/disk/layout.ts");
  await Deno.mkdir(`${server.dataDir}/pieces/${shardOf(CID)}/${CID}/blocker`, { recursive: true });
  const response = await server.upload(CID, "hello");
  await assertErrorAnswer(response, 502, "stage_failed");
  assertEquals(await tempFiles(server.dataDir), []);
  // Nothing was charged and nothing is served.
  assertEquals((await server.server.services.ledger.status("ip:v4:127.0.0.1", 1)).usedBytes, 0);
  assertEquals((await server.get(`/p/${CID}`).then(errorOf)).error, "not_found");
});
