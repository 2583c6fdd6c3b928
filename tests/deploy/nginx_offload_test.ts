/**
 * The offload to nginx (--x-accel-redirect /_pieces/), through the shipped deploy/nginx.conf run
 * by the real nginx (tests/helpers/nginx.ts): nginx sends a disk-stored piece itself, with every
 * header the service set restored and none of its own added, cuts ranges as the service would,
 * and leaves to the service what it must answer itself (416, several ranges, /f/). nginx's
 * workers run as nobody in the data directory's group, as www-data in the service's group does
 * on a server: the permissions let them read the pieces and nothing else, which a process with
 * that identity (setpriv) confirms.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { fetch, proxyTest } from "../helpers/nginx.ts";
import type { Proxy, ProxyOptions } from "../helpers/nginx.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import { pieceCid } from "../../src/client/sdk/mod.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";

const MIB = 1024 * 1024;
const BIG = seededBytes(10 * MIB + 123, 5);

/** The header names a proxied answer has and the service's own (direct, non-offloaded) has too. */
const SERVICE_HEADERS = [
  "content-type",
  "content-length",
  "content-disposition",
  "cache-control",
  "etag",
  "accept-ranges",
  "x-service-piece-cid",
  "x-service-source",
  "x-content-type-options",
  "content-security-policy",
  "access-control-allow-origin",
  "access-control-expose-headers",
];

/** The service offloading to nginx: its data directory's group is the workers' too. */
function offloading(): ProxyOptions {
  const { gid } = Deno.lstatSync(Deno.cwd());
  return {
    serviceArgs: ["--x-accel-redirect", "/_pieces/"],
    // The data directory is the test process's group (root's, run as root): the workers join it.
    workerGroup: String(gid === 0 ? "root" : gid),
  };
}

async function upload(proxy: Proxy, client: Deno.HttpClient, bytes: Uint8Array<ArrayBuffer>) {
  const { cid } = await pieceCid(bytes, { pool: null });
  const response = await fetch(`${proxy.https}/api/upload?cid=${cid}`, {
    method: "POST",
    client,
    headers: { "content-type": "video/webm", "x-filename": "clip.webm" },
    body: bytes,
  });
  assertEquals(response.status, 200, await response.clone().text());
  await response.body?.cancel();
  return cid;
}

/** A test behind an offloading proxy, BIG uploaded through it (its cid) by `client`. */
function offloadTest(
  name: string,
  fn: (proxy: Proxy, client: Deno.HttpClient, cid: string) => Promise<void>,
): void {
  proxyTest(name, offloading(), async (proxy) => {
    const client = proxy.client();
    await fn(proxy, client, await upload(proxy, client, BIG));
  });
}

/** The service's log lines for GETs of a route, newest last. */
function requestLines(proxy: Proxy, route: string) {
  return proxy.service.logs.filter((l) => l.msg === "request" && l.route === route);
}

offloadTest(
  "nginx offload: nginx sends the piece, with the service's headers and ranges",
  async (proxy, client, cid) => {
    const whole = await fetch(`${proxy.https}/p/${cid}`, { client });
    assertEquals(whole.status, 200);
    assertEquals(new Uint8Array(await whole.arrayBuffer()), BIG);
    assertEquals(requestLines(proxy, "/p/:cid").at(-1)?.offloaded, true, "nginx sent it");
    // What the service sent nginx (its X-Accel-Redirect answer has every header but the body's),
    // asked as nginx asks: from a trusted proxy's address, with X-Forwarded-For.
    const direct = await fetch(`${proxy.service.url}/p/${cid}`, {
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    assertMatch(
      direct.headers.get("x-accel-redirect")!,
      /^\/_pieces\/pieces\/[0-9a-f]{2}\/[0-9a-f]{2}\//,
    );
    assertEquals(await direct.text(), "");
    // Those two are nginx's to send with the file (the service leaves Accept-Ranges out of a
    // whole file's redirect, so that there is one): they say what the service would.
    const nginxSends: Record<string, string> = {
      "content-length": String(BIG.length),
      "accept-ranges": "bytes",
    };
    for (const name of SERVICE_HEADERS) {
      assertEquals(whole.headers.get(name), nginxSends[name] ?? direct.headers.get(name), name);
    }
    assertEquals(whole.headers.get("etag"), `"${cid}"`);
    // Nothing else: no Last-Modified, no X-Accel-Redirect; nginx's name and HSTS, as always.
    const names = [...whole.headers.keys()].filter((name) => name !== "date").sort();
    assertEquals(names, [...SERVICE_HEADERS, "server", "strict-transport-security"].sort());
    assertEquals(whole.headers.get("strict-transport-security"), "max-age=31536000");

    const cases: [Record<string, string>, number, number][] = [
      [{ range: "bytes=1000-2000999" }, 1000, 2000999],
      [{ range: "bytes=-77" }, BIG.length - 77, BIG.length - 1],
      [{ range: `bytes=${BIG.length - 5}-` }, BIG.length - 5, BIG.length - 1],
      [{ range: "bytes=0-9", "if-range": `"${cid}"` }, 0, 9],
    ];
    for (const [headers, first, last] of cases) {
      const part = await fetch(`${proxy.https}/p/${cid}`, { client, headers });
      assertEquals(part.status, 206, JSON.stringify(headers));
      assertEquals(part.headers.get("content-range"), `bytes ${first}-${last}/${BIG.length}`);
      assertEquals(part.headers.get("etag"), `"${cid}"`);
      assertEquals(new Uint8Array(await part.arrayBuffer()), BIG.subarray(first, last + 1));
      assertEquals(requestLines(proxy, "/p/:cid").at(-1)?.offloaded, true);
    }
    // The piece gateway is offloaded too, with its own headers.
    const gateway = await fetch(`${proxy.https}/piece/${cid}`, {
      client,
      headers: { range: "bytes=5-9" },
    });
    assertEquals(gateway.status, 206);
    assertEquals(gateway.headers.get("content-disposition"), `attachment; filename="${cid}"`);
    assertEquals(gateway.headers.get("cache-control"), "public, max-age=29030400, immutable");
    assertEquals(new Uint8Array(await gateway.arrayBuffer()), BIG.subarray(5, 10));
    assertEquals(requestLines(proxy, "/piece/:pieceCid").at(-1)?.offloaded, true);
    assertEquals(await errorLines(proxy), []);
  },
);

offloadTest(
  "nginx offload: a client that reaches the service directly gets the bytes, not a redirect",
  async (proxy, client, cid) => {
    // From nginx's own address (127.0.0.1 is a trusted proxy here), but not through it.
    const direct = await fetch(`${proxy.service.url}/p/${cid}`);
    assertEquals(direct.status, 200);
    assertEquals(direct.headers.get("x-accel-redirect"), null);
    assertEquals(direct.headers.get("content-length"), String(BIG.length));
    assertEquals(new Uint8Array(await direct.arrayBuffer()), BIG);
    assertEquals(requestLines(proxy, "/p/:cid").at(-1)?.offloaded, undefined);
    const part = await fetch(`${proxy.service.url}/piece/${cid}`, {
      headers: { range: "bytes=7-1048583" },
    });
    assertEquals(part.status, 206);
    assertEquals(part.headers.get("x-accel-redirect"), null);
    assertEquals(new Uint8Array(await part.arrayBuffer()), BIG.subarray(7, 1048584));
    // The SDK's download (what `storage download` runs), pointed at the service, gets every byte.
    using sdk = new StorageClient({ server: proxy.service.url, hashWorkers: 0 });
    const downloaded = await new Response(await sdk.download(cid)).arrayBuffer();
    assertEquals(new Uint8Array(downloaded), BIG);
    // Through nginx the same piece is still nginx's to send, byte for byte.
    const proxied = await fetch(`${proxy.https}/p/${cid}`, { client });
    assertEquals(new Uint8Array(await proxied.arrayBuffer()), BIG);
    assertEquals(requestLines(proxy, "/p/:cid").at(-1)?.offloaded, true);
  },
);

offloadTest(
  "nginx offload: what the service answers itself comes through as it sent it",
  async (proxy, client, cid) => {
    const proxied = async (headers: Record<string, string>, method = "GET") => {
      const response = await fetch(`${proxy.https}/p/${cid}`, { client, headers, method });
      const bytes = new Uint8Array(await response.arrayBuffer());
      return { response, bytes, offloaded: requestLines(proxy, "/p/:cid").at(-1)?.offloaded };
    };
    // Several ranges and a failed If-Range: the whole, sent by the service.
    const ignored: Record<string, string>[] = [
      { range: "bytes=0-1,5-6" },
      { range: "bytes=0-1", "if-range": '"x"' },
    ];
    for (const headers of ignored) {
      const { response, bytes, offloaded } = await proxied(headers);
      assertEquals([response.status, bytes.length, offloaded], [200, BIG.length, undefined]);
    }
    const refused = await proxied({ range: `bytes=${BIG.length}-` });
    assertEquals(refused.response.status, 416);
    assertEquals(refused.response.headers.get("content-range"), `bytes */${BIG.length}`);
    assertEquals(
      JSON.parse(new TextDecoder().decode(refused.bytes)).error,
      "range_not_satisfiable",
    );
    const notModified = await proxied({ "if-none-match": `"${cid}"` });
    assertEquals(notModified.response.status, 304);
    const head = await proxied({ range: "bytes=0-99" }, "HEAD");
    assertEquals([head.response.status, head.response.headers.get("content-length")], [206, "100"]);

    // A split file's /f/ always streams through the service, never offloaded.
    using sdk = new StorageClient({ server: proxy.service.url, hashWorkers: 0 });
    const file = seededBytes(3 * MIB + 7, 6);
    const split = await sdk.upload(file, { pieceSize: MIB, contentType: "video/webm" });
    assertEquals(split.pieces.length, 4);
    const range = await fetch(`${proxy.https}/f/${split.cid}`, {
      client,
      headers: { range: `bytes=${MIB - 3}-${2 * MIB + 3}` },
    });
    assertEquals(range.status, 206);
    assertEquals(new Uint8Array(await range.arrayBuffer()), file.subarray(MIB - 3, 2 * MIB + 4));
    assertEquals(requestLines(proxy, "/f/:cid").at(-1)?.offloaded, undefined);
    // The offload location is nginx's alone: a client asking for it finds nothing.
    const internal = await fetch(`${proxy.https}/_pieces/storage.db`, { client });
    await internal.body?.cancel();
    assertEquals(internal.status, 404);
  },
);

offloadTest(
  "nginx offload: nginx's workers may read the pieces and nothing else",
  async (proxy, _client, cid) => {
    const dataDir = proxy.service.dataDir;
    const piece = `${dataDir}/pieces/${shardOf(cid)}/${cid}`;
    const mode = (path: string) => ((Deno.statSync(path).mode ?? 0) & 0o777).toString(8);
    assertEquals(
      {
        dataDir: mode(dataDir),
        database: mode(`${dataDir}/storage.db`),
        key: mode(`${dataDir}/hmac.key`),
        pieces: mode(`${dataDir}/pieces`),
        tmp: mode(`${dataDir}/pieces/tmp`),
        shard: mode(`${dataDir}/pieces/${shardOf(cid)}`),
        piece: mode(piece),
      },
      {
        dataDir: "710",
        database: "600",
        key: "600",
        pieces: "710",
        tmp: "700",
        shard: "710",
        piece: "640",
      },
    );
    // As the workers are: nobody, in the directory's group.
    const { gid } = Deno.statSync(dataDir);
    const asWorker = async (args: string[]) => {
      const run = new Deno.Command("setpriv", {
        args: ["--reuid=nobody", `--regid=${gid}`, "--clear-groups", ...args],
        stdout: "null",
        stderr: "null",
      });
      return (await run.output()).code === 0;
    };
    assertOk(await asWorker(["cat", piece]), "a worker reads a piece");
    assertEquals(await asWorker(["cat", `${dataDir}/storage.db`]), false, "not the database");
    assertEquals(await asWorker(["cat", `${dataDir}/hmac.key`]), false, "not the key");
    assertEquals(await asWorker(["ls", dataDir]), false, "nor list the directory");
    assertEquals(
      await asWorker(["ls", `${dataDir}/pieces/tmp`]),
      false,
      "nor see uploads in flight",
    );
  },
);

/** nginx's error log, but for its start-up notices. */
async function errorLines(proxy: Proxy): Promise<string[]> {
  return (await proxy.errorLog()).split("\n").filter((line) =>
    /\[(error|crit|alert|emerg)\]/.test(line)
  );
}
