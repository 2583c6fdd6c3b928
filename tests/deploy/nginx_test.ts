/**
 * deploy/nginx.conf in front of the real service, run by the real nginx (tests/helpers/nginx.ts
 * says how): headers, ACME and the HTTPS redirect, per-IP caps through the proxy, and the time
 * limits only a proxy has. The offload to nginx (--x-accel-redirect) is nginx_offload_test.ts.
 */
import { listFiles } from "../helpers/files.ts";
import { patternBytes } from "../helpers/server.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { eventually, within } from "../helpers/wait.ts";
import { readResponse, uploadHead, writeAll } from "../helpers/raw_http.ts";
import { fetch, proxyTest } from "../helpers/nginx.ts";
import type { Proxy } from "../helpers/nginx.ts";

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Headers as a plain object, minus those that describe a hop rather than the answer. */
export function headersOf(response: Response): Record<string, string> {
  const hopByHop = new Set(["date", "connection", "keep-alive", "transfer-encoding"]);
  return Object.fromEntries([...response.headers].filter(([name]) => !hopByHop.has(name)));
}

async function limitsOf(url: string, client?: Deno.HttpClient): Promise<number> {
  const response = await fetch(`${url}/api/limits`, { client });
  assertEquals(response.status, 200);
  return (await response.json()).usedTodayBytes;
}

/** Waits ms, or less if `until` settles first; never leaves a timer behind. */
function pause(ms: number, until: Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    until.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function connectTls(proxy: Proxy): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: proxy.tlsPort,
    caCerts: [proxy.caCert],
    alpnProtocols: ["http/1.1"],
  });
  await conn.handshake();
  return conn;
}

// ---------------------------------------------------------------------------------------------
// The tests

proxyTest(
  "nginx: a retrieval's headers arrive through the proxy as the service sent them",
  {},
  async (proxy) => {
    const client = proxy.client();
    // HTML: Debian's nginx.conf gzips text/html, which would weaken the ETag and drop the length.
    const cid = "nginxheaders0001";
    const html = "<!doctype html><title>t</title><script>alert(document.cookie)</script>\n"
      .repeat(40);
    const uploaded = await fetch(`${proxy.https}/api/upload?cid=${cid}`, {
      method: "POST",
      client,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "x-filename": encodeURIComponent("résumé “final”.html"),
      },
      body: encoder.encode(html),
    });
    assertEquals(uploaded.status, 200, await uploaded.clone().text());
    assertEquals((await uploaded.json()).size, encoder.encode(html).length);

    for (const init of [{}, { headers: { "if-none-match": `"${cid}"` } }]) {
      const direct = await fetch(`${proxy.service.url}/p/${cid}`, init);
      const proxied = await fetch(`${proxy.https}/p/${cid}`, { ...init, client });
      assertEquals(proxied.status, direct.status);
      const directBody = await direct.text();
      assertEquals(await proxied.text(), directBody);
      if (direct.status === 200) assertEquals(directBody, html);
      const expected = headersOf(direct);
      // What nginx adds: its name (no version: server_tokens off) and HSTS. Nothing else changes.
      assertEquals(headersOf(proxied), {
        ...expected,
        server: "nginx",
        "strict-transport-security": "max-age=31536000",
      });
      for (
        const name of [
          "etag",
          "content-type",
          "content-disposition",
          "cache-control",
          "x-service-piece-cid",
          "x-content-type-options",
          "content-security-policy",
        ]
      ) {
        assertOk(name in expected, `the service sent ${name} (status ${direct.status})`);
      }
    }
    assertEquals(
      (await fetch(`${proxy.https}/p/${cid}`, { method: "HEAD", client })).headers.get("etag"),
      `"${cid}"`,
    );
    // fetch spoke HTTP/2 to nginx.
    assertMatch(await proxy.accessLog(), new RegExp(`"GET /p/${cid} HTTP/2.0" 200 HTTP/2.0`));
    // The proxy answers /metrics itself; Prometheus on the host scrapes the service directly.
    const metrics = await fetch(`${proxy.https}/metrics`, { client });
    await metrics.body?.cancel();
    assertEquals(metrics.status, 404);
  },
);

proxyTest(
  "nginx: port 80 serves ACME challenges and sends everything else to HTTPS",
  {},
  async (proxy) => {
    await Deno.writeTextFile(`${proxy.dir}/acme/.well-known/acme-challenge/probe`, "challenge\n");
    const challenge = await fetch(`${proxy.http}/.well-known/acme-challenge/probe`);
    assertEquals([challenge.status, await challenge.text()], [200, "challenge\n"]);
    const other = await fetch(`${proxy.http}/p/somecid0001?x=1`, { redirect: "manual" });
    await other.body?.cancel();
    assertEquals(other.status, 308);
    // An upload sent to http:// is redirected with its method kept (308), not turned into a GET.
    const upload = await fetch(`${proxy.http}/api/upload?cid=somecid0002`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "x",
      redirect: "manual",
    });
    await upload.body?.cancel();
    assertEquals(upload.status, 308);
    assertEquals(other.headers.get("location"), "https://127.0.0.1/p/somecid0001?x=1");
  },
);

proxyTest(
  "nginx: uploads stream through to the service unbuffered, up to the 5 GiB cap",
  {},
  async (proxy) => {
    const size = 2 * 1024 * 1024;
    const body = patternBytes(size, 3);
    const conn = await connectTls(proxy);
    try {
      await writeAll(conn, uploadHead("nginxstream0001", size, { host: "files.example.org" }));
      await writeAll(conn, body.subarray(0, size / 2));
      // Half the body is still with the client, and the service is already receiving it.
      await eventually(async () => {
        const health = await (await proxy.service.get("/healthz")).json();
        return health.uploads.inFlight === 1;
      }, "the service receiving an upload whose client still holds back half of it");
      await writeAll(conn, body.subarray(size / 2));
      const answer = await within(readResponse(conn), 10_000, "the upload's answer");
      assertEquals(answer.status, 200, answer.body);
      assertEquals(JSON.parse(answer.body).size, size);
    } finally {
      conn.close();
    }
    const stored = await proxy.service.get("/p/nginxstream0001");
    assertEquals(new Uint8Array(await stored.arrayBuffer()), body);
    assertEquals(await listFiles(`${proxy.dir}/client_body_temp`), [], "nothing spooled to disk");
    assertOk(!/buffered to a temporary file/.test(await proxy.errorLog()));

    // Exactly 5 GiB passes nginx (the service then answers, here with its sponsored cap); one byte
    // more is refused by nginx itself. Neither sends a body byte.
    const declare = async (length: number) => {
      const conn = await connectTls(proxy);
      try {
        await writeAll(conn, uploadHead("nginxbigfile0001", length, { host: "files.example.org" }));
        return await within(readResponse(conn), 10_000, `the answer to ${length} bytes`);
      } finally {
        conn.close();
      }
    };
    const atCap = await declare(5 * 1024 ** 3);
    assertEquals([atCap.status, JSON.parse(atCap.body).error], [413, "too_large"]);
    const overCap = await declare(5 * 1024 ** 3 + 1);
    assertEquals(overCap.status, 413);
    assertMatch(overCap.body, /<center>nginx<\/center>/);
  },
);

proxyTest(
  "nginx: per-IP caps count the address nginx saw, whatever X-Forwarded-For a client sends",
  { serviceArgs: ["--sponsored-daily-cap", "1KiB"] },
  async (proxy) => {
    const one = proxy.client("127.0.0.1");
    const two = proxy.client("127.0.0.2");
    const upload = async (
      client: Deno.HttpClient,
      cid: string,
      headers: Record<string, string> = {},
    ) => {
      const response = await fetch(`${proxy.https}/api/upload?cid=${cid}`, {
        method: "POST",
        client,
        headers: { "content-type": "application/octet-stream", ...headers },
        body: patternBytes(600, cid.length + cid.charCodeAt(0)),
      });
      await response.body?.cancel();
      return response.status;
    };

    assertEquals(await upload(one, "fromone00001"), 200);
    assertEquals(await upload(one, "fromone00002"), 429, "127.0.0.1's 1 KiB is used up");
    // A made-up hop does not open a fresh bucket: nginx replaces the header with what it saw.
    assertEquals(await upload(one, "fromone00003", { "x-forwarded-for": "203.0.113.7" }), 429);
    assertEquals(await upload(one, "fromone00004", { "x-forwarded-for": "127.0.0.2" }), 429);
    // Another source address has a bucket of its own.
    assertEquals(await upload(two, "fromtwo00001"), 200);

    // Through nginx each client sees its own usage; the service, asked directly from 127.0.0.2
    // (an untrusted peer, so counted by its own address), agrees on whose bytes those were.
    assertEquals(await limitsOf(proxy.https, one), 600);
    assertEquals(await limitsOf(proxy.https, two), 600);
    using directFromTwo = Deno.createHttpClient({ localAddress: "127.0.0.2" });
    assertEquals(await limitsOf(proxy.service.url, directFromTwo), 600);
    // A single global counter would say 1200 to both.
  },
);

proxyTest(
  "nginx: a client dripping its headers is cut off at client_header_timeout, others served",
  { headerTimeout: "2s" },
  async (proxy) => {
    const client = proxy.client();
    const conn = await connectTls(proxy);
    // The request line at once, then the headers a byte a second: each byte comes well within
    // the 2 s, so only a deadline for the whole head (not an idle timeout) can stop this client.
    await writeAll(conn, encoder.encode("GET /healthz HTTP/1.1\r\n"));
    const head = encoder.encode(
      "Host: files.example.org\r\nUser-Agent: drip\r\nAccept: */*\r\n\r\n",
    );
    const started = performance.now();
    let cutAfterMs: number | null = null;
    // nginx answers a header timeout by closing the connection, without a response.
    const cut = (async () => {
      try {
        const n = await conn.read(new Uint8Array(1024));
        return n === null ? "closed" : "answered";
      } catch {
        return "closed";
      } finally {
        cutAfterMs = performance.now() - started;
      }
    })();
    // One byte a second: the client's own pace, not a wait for anything.
    const drip = (async () => {
      let sent = 0;
      for (; sent < head.length && cutAfterMs === null; sent++) {
        try {
          await conn.write(head.subarray(sent, sent + 1));
        } catch {
          break;
        }
        await pause(1000, cut);
      }
      return sent;
    })();
    try {
      let served = 0;
      while (cutAfterMs === null && served < 200) {
        const response = await fetch(`${proxy.https}/healthz`, { client });
        await response.body?.cancel();
        assertEquals(response.status, 200, "a normal request while the drip goes on");
        served++;
        await pause(50, cut);
      }
      assertEquals(await within(cut, 15_000, "nginx closing the dripping connection"), "closed");
      const sent = await drip;
      assertOk(sent < head.length, `cut off mid-header (${sent} of ${head.length} bytes sent)`);
      const ms = cutAfterMs as number | null;
      assertOk(ms !== null && ms >= 1500 && ms < 10_000, `cut off after ${ms} ms`);
      assertOk(served >= 3, `${served} requests served meanwhile`);
      assertMatch(
        await proxy.errorLog(),
        /client timed out .* while reading client request headers/,
      );
    } finally {
      conn.close();
    }
  },
);
