/**
 * deploy/nginx.conf in front of the real service, run by the real nginx (Debian's package,
 * /usr/sbin/nginx, as the current user, everything it writes in a temp directory).
 *
 * The site file is the shipped one with only its ports, certificate paths, ACME root and (for
 * the drip test) header timeout swapped, each swap checked to hit exactly once, so a change to
 * the shipped file is what these tests run. The main nginx.conf around it copies what Debian's
 * /etc/nginx/nginx.conf sets around the sites it includes (gzip on, among others). TLS is real:
 * a throwaway CA and a certificate for 127.0.0.1 made with openssl, trusted by the test's
 * clients through Deno.createHttpClient({ caCerts }); fetch talks HTTP/2 to nginx.
 *
 * Without nginx or openssl the tests are ignored, except in CI (CI=true), where .ci/run
 * installs both and their absence is a failure.
 */
import { listFiles } from "../helpers/files.ts";
import { patternBytes, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { eventually, within } from "../helpers/wait.ts";
import { readResponse, uploadHead, writeAll } from "../helpers/raw_http.ts";

const NGINX = "/usr/sbin/nginx";
const SITE = new URL("../../deploy/nginx.conf", import.meta.url);

function installed(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

const missing = [NGINX, "/usr/bin/openssl"].filter((path) => !installed(path));
const ignore = missing.length > 0 && Deno.env.get("CI") !== "true";
if (ignore) console.warn(`nginx tests ignored: ${missing.join(", ")} not installed`);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** fetch, but a request gives up after 15 s: a hung proxy or server fails the test, not stalls it. */
function fetch(
  input: string,
  init: RequestInit & { client?: Deno.HttpClient } = {},
): Promise<Response> {
  return globalThis.fetch(input, { signal: AbortSignal.timeout(15_000), ...init });
}

// ---------------------------------------------------------------------------------------------
// The fixture: service + nginx + certificates

interface Proxy extends AsyncDisposable {
  service: TestServer;
  /** https://127.0.0.1:<port>, nginx's TLS server block. */
  https: string;
  /** http://127.0.0.1:<port>, nginx's port-80 server block. */
  http: string;
  tlsPort: number;
  /** The throwaway CA (PEM) that signed nginx's certificate. */
  caCert: string;
  dir: string;
  /** An HTTP client trusting the CA, optionally bound to a source address; closed on dispose. */
  client(localAddress?: string): Deno.HttpClient;
  errorLog(): Promise<string>;
  accessLog(): Promise<string>;
}

interface ProxyOptions {
  serviceArgs?: string[];
  /** Replaces the shipped client_header_timeout (10s), to see it fire quickly. */
  headerTimeout?: string;
}

async function startProxy(options: ProxyOptions = {}): Promise<Proxy> {
  const service = await startTestServer({
    args: ["--trusted-proxies", "127.0.0.1", ...(options.serviceArgs ?? [])],
  });
  const dir = await Deno.makeTempDir({ prefix: "nginx-test-" });
  const clients: Deno.HttpClient[] = [];
  let nginx: Nginx | null = null;
  try {
    // Started as root, nginx runs its workers as nobody: they must be able to enter the directory.
    await Deno.chmod(dir, 0o755);
    const caCert = await makeCertificates(dir);
    await Deno.mkdir(`${dir}/acme/.well-known/acme-challenge`, { recursive: true });
    const servicePort = Number(new URL(service.url).port);
    // A free port can be taken between our probe and nginx's bind: try a few pairs.
    for (let attempt = 1; nginx === null; attempt++) {
      const [tlsPort, httpPort] = [freePort(), freePort()];
      const site = siteConfig(await Deno.readTextFile(SITE), {
        tlsPort,
        httpPort,
        servicePort,
        dir,
        headerTimeout: options.headerTimeout,
      });
      await Deno.writeTextFile(`${dir}/site.conf`, site);
      await Deno.writeTextFile(`${dir}/nginx.conf`, mainConfig(dir));
      try {
        nginx = await startNginx(dir, tlsPort, httpPort);
      } catch (error) {
        if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
      }
    }
    const running = nginx;
    return {
      service,
      https: `https://127.0.0.1:${running.tlsPort}`,
      http: `http://127.0.0.1:${running.httpPort}`,
      tlsPort: running.tlsPort,
      caCert,
      dir,
      client(localAddress) {
        const client = Deno.createHttpClient({ caCerts: [caCert], localAddress });
        clients.push(client);
        return client;
      },
      errorLog: () => Deno.readTextFile(`${dir}/error.log`),
      accessLog: () => Deno.readTextFile(`${dir}/access.log`),
      async [Symbol.asyncDispose]() {
        for (const client of clients) client.close();
        await running.stop();
        await service[Symbol.asyncDispose]();
        await Deno.remove(dir, { recursive: true });
      },
    };
  } catch (error) {
    for (const client of clients) client.close();
    await nginx?.stop();
    await service[Symbol.asyncDispose]();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A CA and a certificate for 127.0.0.1 it signed, as certbot's fullchain.pem and privkey.pem. */
async function makeCertificates(dir: string): Promise<string> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run("openssl", [
    "req",
    "-x509",
    ...ec,
    "-days",
    "1",
    "-subj",
    "/CN=nginx test CA",
    "-keyout",
    `${dir}/ca.key`,
    "-out",
    `${dir}/ca.pem`,
  ]);
  await run("openssl", [
    "req",
    ...ec,
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    `${dir}/privkey.pem`,
    "-out",
    `${dir}/server.csr`,
  ]);
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=IP:127.0.0.1\n",
  );
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    `${dir}/server.csr`,
    "-CA",
    `${dir}/ca.pem`,
    "-CAkey",
    `${dir}/ca.key`,
    "-set_serial",
    "1",
    "-days",
    "1",
    "-extfile",
    `${dir}/server.ext`,
    "-out",
    `${dir}/fullchain.pem`,
  ]);
  return await Deno.readTextFile(`${dir}/ca.pem`);
}

async function run(command: string, args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command(command, {
    args,
    stdout: "null",
    stderr: "piped",
  })
    .output();
  if (code !== 0) throw new Error(`${command} ${args[0]} failed: ${decoder.decode(stderr)}`);
}

interface SiteOptions {
  tlsPort: number;
  httpPort: number;
  servicePort: number;
  dir: string;
  headerTimeout?: string;
}

/** The shipped site with its addresses and paths swapped for the test's; nothing else changes. */
export function siteConfig(shipped: string, o: SiteOptions): string {
  let site = shipped.replace(/(^|\s)#.*$/gm, "$1");
  const swap = (from: string, to: string) => {
    const count = site.split(from).length - 1;
    if (count !== 1) throw new Error(`deploy/nginx.conf has ${count} × "${from}", expected 1`);
    site = site.replace(from, to);
  };
  swap("listen 80;", `listen 127.0.0.1:${o.httpPort};`);
  swap("listen [::]:80;", "");
  swap("listen 443 ssl http2;", `listen 127.0.0.1:${o.tlsPort} ssl http2;`);
  swap("listen [::]:443 ssl http2;", "");
  swap("server 127.0.0.1:8080;", `server 127.0.0.1:${o.servicePort};`);
  swap("/etc/letsencrypt/live/files.example.org/fullchain.pem", `${o.dir}/fullchain.pem`);
  swap("/etc/letsencrypt/live/files.example.org/privkey.pem", `${o.dir}/privkey.pem`);
  swap("root /var/www/html;", `root ${o.dir}/acme;`);
  if (o.headerTimeout !== undefined) {
    swap("client_header_timeout 10s;", `client_header_timeout ${o.headerTimeout};`);
  }
  return site;
}

/** nginx.conf around the site: Debian's http-level settings, every path in the test's dir. */
function mainConfig(dir: string): string {
  return `worker_processes 1;
error_log ${dir}/error.log info;
events {
    worker_connections 256;
}
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;
    ssl_prefer_server_ciphers on;
    gzip on;
    log_format proxied '$remote_addr "$request" $status $server_protocol';
    access_log ${dir}/access.log proxied;
    client_body_temp_path ${dir}/client_body_temp;
    proxy_temp_path ${dir}/proxy_temp;
    fastcgi_temp_path ${dir}/fastcgi_temp;
    uwsgi_temp_path ${dir}/uwsgi_temp;
    scgi_temp_path ${dir}/scgi_temp;
    include ${dir}/site.conf;
}
`;
}

interface Nginx {
  tlsPort: number;
  httpPort: number;
  stop(): Promise<void>;
}

/** Starts nginx in the foreground and resolves once both ports accept connections. */
async function startNginx(dir: string, tlsPort: number, httpPort: number): Promise<Nginx> {
  const child = new Deno.Command(NGINX, {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", `daemon off; pid ${dir}/nginx.pid;`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const stop = async () => {
    if (!exited) child.kill("SIGTERM");
    // SIGTERM is nginx's fast shutdown; if it hangs, SIGKILL the master (ours, by its pid).
    await within(status, 10_000, "nginx exits on SIGTERM").catch(() => {
      if (!exited) child.kill("SIGKILL");
      return status;
    });
    await stderr;
  };
  const accepts = async (port: number) => {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return true;
    } catch {
      return false;
    }
  };
  try {
    await eventually(
      async () => {
        if (exited) throw new Error(`nginx exited at start: ${await stderr}`);
        return await accepts(tlsPort) && await accepts(httpPort);
      },
      "nginx listening on both ports",
      { timeoutMs: 10_000, intervalMs: 20 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { tlsPort, httpPort, stop };
}

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Headers as a plain object, minus those that describe a hop rather than the answer. */
function headersOf(response: Response): Record<string, string> {
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

Deno.test({
  name: "nginx: a retrieval's headers arrive through the proxy as the service sent them",
  ignore,
  async fn() {
    await using proxy = await startProxy();
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
});

Deno.test({
  name: "nginx: port 80 serves ACME challenges and sends everything else to HTTPS",
  ignore,
  async fn() {
    await using proxy = await startProxy();
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
});

Deno.test({
  name: "nginx: uploads stream through to the service unbuffered, up to the 5 GiB cap",
  ignore,
  async fn() {
    await using proxy = await startProxy();
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
});

Deno.test({
  name: "nginx: per-IP caps count the address nginx saw, whatever X-Forwarded-For a client sends",
  ignore,
  async fn() {
    await using proxy = await startProxy({ serviceArgs: ["--sponsored-daily-cap", "1KiB"] });
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
});

Deno.test({
  name: "nginx: a client dripping its headers is cut off at client_header_timeout, others served",
  ignore,
  async fn() {
    await using proxy = await startProxy({ headerTimeout: "2s" });
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
});
