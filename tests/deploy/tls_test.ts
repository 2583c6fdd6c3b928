/**
 * HTTPS with --tls-cert/--tls-key, on the real server: requests over TLS with
 * HTTP/2 offered by ALPN, a renewed pair served without a restart (swapped in
 * by atomic rename, as certbot does) while an upload in flight finishes, a bad
 * new pair ignored and logged, and bad files at start-up refused in one line.
 * Certificates are made here with openssl (a Debian package CI installs).
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { ListenerLostError, SwappableServer } from "../../src/net/swappable_server.ts";
import { readTlsPair } from "../../src/net/tls_files.ts";
import { readResponse, uploadHead, writeAll } from "../helpers/raw_http.ts";
import { patternBytes, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { makePair, pairFiles } from "../helpers/tls_pair.ts";
import { startTaskFlags } from "../../scripts/lib/spawn_server.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** True if a new TLS connection to the server presents the certificate `cert` (and only it). */
async function presents(server: TestServer, cert: string): Promise<boolean> {
  let conn: Deno.TlsConn | null = null;
  try {
    conn = await Deno.connectTls({
      hostname: "127.0.0.1",
      port: server.server.port,
      caCerts: [cert],
    });
    await conn.handshake();
    return true;
  } catch {
    return false;
  } finally {
    conn?.close();
  }
}

function logged(server: TestServer, msg: string): Record<string, unknown> | undefined {
  return server.logs.find((line) => line.msg === msg);
}

Deno.test("tls: HTTPS with the given pair: /healthz, an upload and its retrieval, HTTP/2 by ALPN", async () => {
  const pair = await makePair(0x11);
  await using files = await pairFiles(pair);
  await using server = await startTestServer({ args: files.args });
  assertMatch(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  using client = Deno.createHttpClient({ caCerts: [pair.cert] });

  assertEquals(
    (await fetch(`${server.url}/healthz`, { client }).then((r) => r.json())).status,
    "ok",
  );
  const body = patternBytes(5000);
  const uploaded = await fetch(`${server.url}/api/upload?cid=tlsupload0001`, {
    client,
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body,
  });
  assertEquals(uploaded.status, 200);
  assertEquals((await uploaded.json()).retrievalUrl, `${server.url}/p/tlsupload0001`);
  const retrieved = await fetch(`${server.url}/p/tlsupload0001`, { client });
  assertEquals(new Uint8Array(await retrieved.arrayBuffer()), body);

  // The server picks h2 when a client offers it, and a client that speaks only h2 is served.
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: server.server.port,
    caCerts: [pair.cert],
    alpnProtocols: ["h2", "http/1.1"],
  });
  assertEquals((await conn.handshake()).alpnProtocol, "h2");
  conn.close();
  using http2Only = Deno.createHttpClient({ caCerts: [pair.cert], http1: false, http2: true });
  assertEquals((await fetch(`${server.url}/healthz`, { client: http2Only })).status, 200);

  const listening = logged(server, "listening")!;
  assertEquals([listening.url, listening.tls, listening.cert], [server.url, "on", files.certFile]);
});

Deno.test("tls: a renewed pair is served at once, without a restart; an HTTP/1.1 upload in flight finishes", async () => {
  const [first, renewed] = [await makePair(0x21), await makePair(0x22)];
  await using files = await pairFiles(first);
  await using server = await startTestServer({ args: files.args, tlsPollIntervalMs: 20 });
  using firstClient = Deno.createHttpClient({ caCerts: [first.cert] });
  const inFlight = async () =>
    (await (await fetch(`${server.url}/healthz`, { client: firstClient })).json()).uploads.inFlight;

  // An HTTP/1.1 upload, half sent, on a connection made with the first certificate.
  const body = patternBytes(200_000, 3);
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: server.server.port,
    caCerts: [first.cert],
  });
  try {
    await writeAll(conn, uploadHead("tlsrenewal001", body.length));
    await writeAll(conn, body.subarray(0, 1000));
    await eventually(async () => await inFlight() === 1, "the upload in its handler");

    // The accept loop owns the connections: the listener is swapped under the upload.
    await files.install(renewed.cert, renewed.key);
    await eventually(() => presents(server, renewed.cert), "the renewed certificate served");
    const reloaded = logged(server, "TLS certificate reloaded")!;
    assertEquals([reloaded.serial, reloaded.cert], [renewed.serial, files.certFile]);

    await writeAll(conn, body.subarray(1000));
    const answer = await readResponse(conn);
    assertEquals(answer.status, 200, answer.body);
  } finally {
    conn.close();
  }

  using renewedClient = Deno.createHttpClient({ caCerts: [renewed.cert] });
  const retrieved = await fetch(`${server.url}/p/tlsrenewal001`, { client: renewedClient });
  assertEquals(new Uint8Array(await retrieved.arrayBuffer()), body);
  assertEquals(server.logs.filter((line) => line.msg === "starting").length, 1, "no restart");
  // A new connection that trusts only the first certificate is refused (connections made
  // before the switch, like firstClient's kept-alive one, carry on until they close).
  using onlyFirst = Deno.createHttpClient({ caCerts: [first.cert] });
  const refused = await fetch(`${server.url}/healthz`, { client: onlyFirst }).catch((e) => e);
  assertMatch(String(refused.cause), /invalid peer certificate/);
});

Deno.test("tls: a new pair whose key does not match is logged and the old certificate stays", async () => {
  const [first, other] = [await makePair(0x31), await makePair(0x32)];
  await using files = await pairFiles(first);
  await using server = await startTestServer({ args: files.args, tlsPollIntervalMs: 20 });

  await files.install(other.cert, first.key);
  const rejected = "new TLS files cannot be used; still serving the previous certificate";
  await eventually(() => logged(server, rejected) !== undefined, "the bad pair logged");
  assertMatch(String(logged(server, rejected)!.error), /is not the key of the certificate/);
  assertEquals(logged(server, rejected)!.level, "error");
  assertEquals(await presents(server, first.cert), true);
  assertEquals(await presents(server, other.cert), false);

  // Once the key that goes with it arrives, the pair is served.
  await files.install(other.cert, other.key);
  await eventually(() => presents(server, other.cert), "the completed pair served");
  assertEquals(server.logs.filter((line) => line.msg === rejected).length, 1, "logged once");
});

Deno.test("tls: plain HTTP stays the default", async () => {
  await using server = await startTestServer();
  assertMatch(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assertEquals((await server.get("/healthz")).status, 200);
  assertEquals(logged(server, "listening")!.tls, "off");
});

Deno.test("tls: unusable files stop the start: one line `error: …`, exit status 2", async () => {
  const [pair, other] = [await makePair(0x41), await makePair(0x42)];
  await using files = await pairFiles(pair);
  const dataDir = await Deno.makeTempDir({ prefix: "tls-start-" });
  try {
    const run = async (flags: string[], certFile: string, keyFile: string) => {
      const serve = ["--port", "0", "--data-dir", dataDir, "--tls-cert", certFile];
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", ...flags, `${ROOT}main.ts`, ...serve, "--tls-key", keyFile],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assertEquals(out.code, 2, stderr);
      assertEquals(stderr.trimEnd().split("\n").length, 1, stderr);
      assertMatch(stderr, /^error: /);
      return stderr;
    };
    const all = ["--allow-all"];
    assertMatch(
      await run(all, `${files.certFile}.missing`, files.keyFile),
      /--tls-cert \S+\.missing: cannot read it/,
    );
    const mismatched = `${files.certFile}.other`;
    await Deno.writeTextFile(mismatched, other.cert);
    assertMatch(await run(all, mismatched, files.keyFile), /is not the key of the certificate/);
    await Deno.writeTextFile(mismatched, "not a certificate");
    assertMatch(await run(all, mismatched, files.keyFile), /holds no PEM certificate/);
    // The start task may read only the data directory: the line names the flag to add.
    assertMatch(
      await run(await startTaskFlags(dataDir), files.certFile, files.keyFile),
      /--tls-cert .*--allow-read/,
    );
    assertEquals(await Array.fromAsync(Deno.readDir(dataDir)), [], "the data directory untouched");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("tls: a reload that cannot bind any pair says it lost the address, and binds again by itself", async () => {
  const [first, second] = [await makePair(41), await makePair(42)];
  await using firstFiles = await pairFiles(first);
  await using secondFiles = await pairFiles(second);
  const server = new SwappableServer({
    hostname: "127.0.0.1",
    port: 0,
    tls: await readTlsPair(firstFiles),
    handler: () => new Response("ok"),
    onError: () => new Response("error", { status: 500 }),
  });
  const { port } = server.addr;
  const newPair = await readTlsPair(secondFiles);
  // The runtime refuses every bind while the listener is swapped (another process took the
  // port in the gap): neither the new pair nor the old one can be bound.
  const realServe = Deno.serve;
  Object.assign(Deno, {
    serve: () => {
      throw new Deno.errors.AddrInUse("taken by another process");
    },
  });
  let failure: unknown = null;
  try {
    await server.replaceCertificate(newPair);
  } catch (error) {
    failure = error;
  } finally {
    Object.assign(Deno, { serve: realServe });
  }
  try {
    assertOk(failure instanceof ListenerLostError, String(failure));
    // The address is free again: the server binds the old pair by itself.
    await eventually(async () => {
      try {
        const conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [first.cert] });
        await conn.handshake();
        conn.close();
        return true;
      } catch {
        return false;
      }
    }, "the server listening again with its old certificate");
  } finally {
    await server.shutdown();
  }
});
