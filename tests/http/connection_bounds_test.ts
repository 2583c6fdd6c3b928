/**
 * Connections are bounded and the process never dies of them: a deadline
 * for the request head (--header-timeout), one for the next head on a
 * kept-alive connection (--keep-alive-timeout), a cap that makes room by
 * closing the oldest idle connection (--max-connections), a cap per client
 * address (--max-connections-per-client), and running out of file
 * descriptors refuses connections instead of ending the process. Clients are
 * 127.0.0.x source addresses; each test fails against plain Deno.serve,
 * which has none of these.
 */
import * as net from "node:net";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually, within } from "../helpers/wait.ts";
import { serveConnection } from "../../src/net/serve_connection.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import type { SpawnedServer } from "../../scripts/lib/spawn_server.ts";

/** A raw connection from a loopback source address, and when the server closed it. */
interface RawConnection {
  socket: net.Socket;
  readonly closed: boolean;
  closing: Promise<void>;
  received(): string;
}

async function connectFrom(port: number, from = "127.0.0.1"): Promise<RawConnection> {
  const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let closed = false;
  let text = "";
  socket.on("data", (chunk: Uint8Array) => text += new TextDecoder().decode(chunk));
  socket.on("error", () => {});
  const closing = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closed = true;
      resolve();
    })
  );
  return {
    socket,
    get closed() {
      return closed;
    },
    closing,
    received: () => text,
  };
}

function portOf(server: TestServer): number {
  return server.server.port;
}

/** The service in a process of its own, allowed 256 open files. */
function spawnWithFewDescriptors(dataDir: string, args: string[]): Promise<SpawnedServer> {
  return spawnServer(dataDir, [...args, "--hash-workers", "0"], { nofile: 256 });
}

/** `count` idle connections from 127.0.0.2-5 (those the server refuses at once are left out). */
async function floodOf(service: SpawnedServer, count: number): Promise<RawConnection[]> {
  const port = Number(new URL(service.url).port);
  const flood: RawConnection[] = [];
  for (let i = 0; i < count; i++) {
    const connection = await connectFrom(port, `127.0.0.${2 + (i % 4)}`).catch(() => null);
    if (connection) flood.push(connection);
  }
  return flood;
}

Deno.test("connections: this Deno serves accepted connections (the internal the accept loop needs)", () => {
  assertEquals(typeof serveConnection, "function");
});

Deno.test("connections: a head not complete within --header-timeout is closed, and so is a silent one", async () => {
  await using server = await startTestServer({ args: ["--header-timeout", "1"] });
  const silent = await connectFrom(portOf(server));
  const slow = await connectFrom(portOf(server));
  slow.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  const started = performance.now();
  await within(Promise.all([silent.closing, slow.closing]), 5000, "both closed by the server");
  const waited = performance.now() - started;
  assertOk(waited >= 900 && waited < 3000, `closed after ${waited} ms`);
  assertEquals(server.server.connections()?.headerTimeouts, 2);
  // And /metrics counts them.
  const metrics = await (await server.get("/metrics")).text();
  assertMatch(metrics, /^storage_connections_total\{outcome="header_timeout"\} 2$/m);
  assertMatch(metrics, /^storage_connections_open \d+$/m);
  // A complete head in time is answered.
  const prompt = await connectFrom(portOf(server));
  prompt.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  await within(prompt.closing, 5000, "answered");
  assertMatch(prompt.received(), /^HTTP\/1\.1 200 /);
});

Deno.test("connections: a kept-alive connection idle past --keep-alive-timeout is closed; one in use is served", async () => {
  await using server = await startTestServer({ args: ["--keep-alive-timeout", "1"] });
  const kept = await connectFrom(portOf(server));
  kept.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  await eventually(() => /^HTTP\/1\.1 200 /.test(kept.received()), "the first answer");
  // A second request on the same connection inside the timeout is served.
  kept.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  await eventually(() => kept.received().split("HTTP/1.1 200").length === 3, "the second answer");
  const answered = performance.now();
  await within(kept.closing, 5000, "the idle connection closed");
  assertOk(performance.now() - answered >= 900, "not before the keep-alive timeout");
  assertEquals(server.server.connections()?.keepAliveTimeouts, 1);
});

Deno.test("connections: the keep-alive timeout holds after an answer from the small-piece cache too", async () => {
  await using server = await startTestServer({ args: ["--keep-alive-timeout", "1"] });
  const stored = await server.upload("bafkcachedkeep1", "a small piece");
  await stored.body?.cancel();
  await (await server.get("/p/bafkcachedkeep1")).bytes(); // now in the cache
  const kept = await connectFrom(portOf(server));
  kept.socket.write("GET /p/bafkcachedkeep1 HTTP/1.1\r\nHost: x\r\n\r\n");
  await eventually(() => kept.received().endsWith("a small piece"), "the cached answer");
  const answered = performance.now();
  await within(kept.closing, 5000, "the idle connection closed");
  assertOk(performance.now() - answered < 3000, "at the keep-alive timeout, not the header one");
});

Deno.test("connections: at --max-connections a new client takes the place of the oldest idle connection", async () => {
  await using server = await startTestServer({ args: ["--max-connections", "4"] });
  const idle = [];
  for (let i = 0; i < 4; i++) idle.push(await connectFrom(portOf(server), "127.0.0.2"));
  await eventually(() => server.server.connections()?.open === 4, "four idle connections held");
  using client = Deno.createHttpClient({ localAddress: "127.0.0.9" });
  const response = await fetch(`${server.url}/healthz`, { client });
  assertEquals(response.status, 200);
  await response.body?.cancel();
  await within(idle[0].closing, 5000, "the oldest idle connection closed");
  assertEquals(idle.slice(1).map((c) => c.closed), [false, false, false]);
  assertEquals(server.server.connections()?.evicted, 1);
  for (const connection of idle) connection.socket.destroy();
});

Deno.test("connections: past --max-connections-per-client an address's new connection is closed at once", async () => {
  await using server = await startTestServer({ args: ["--max-connections-per-client", "3"] });
  const held = [];
  for (let i = 0; i < 3; i++) held.push(await connectFrom(portOf(server), "127.0.0.2"));
  await eventually(() => server.server.connections()?.open === 3, "three connections held");
  const fourth = await connectFrom(portOf(server), "127.0.0.2");
  await within(fourth.closing, 5000, "the fourth closed");
  assertEquals(fourth.received(), "");
  assertEquals(held.map((c) => c.closed), [false, false, false]);
  // Another address is served.
  using other = Deno.createHttpClient({ localAddress: "127.0.0.3" });
  const response = await fetch(`${server.url}/healthz`, { client: other });
  assertEquals(response.status, 200);
  await response.body?.cancel();
  for (const connection of held) connection.socket.destroy();
});

Deno.test("connections: out of file descriptors the process lives on, and serves once they are back", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-emfile-" });
  // A cap far above the 256 descriptors: accept() really fails with EMFILE.
  await using service = await spawnWithFewDescriptors(dataDir, ["--max-connections", "100000"]);
  const flood = await floodOf(service, 400);
  try {
    // The server evicts idle connections to free descriptors, and keeps some free for files:
    // a new client's upload (a temporary file, the database) and retrieval go through.
    let served = false;
    await eventually(
      async () => {
        using client = Deno.createHttpClient({ localAddress: "127.0.0.9" });
        const send = (path: string, init: RequestInit = {}) =>
          fetch(`${service.url}${path}`, { client, signal: AbortSignal.timeout(2000), ...init })
            .then(async (response) => {
              await response.body?.cancel();
              return response.status;
            }, () => null);
        served = await send("/api/upload?cid=bafkfloodupload1", {
              method: "POST",
              headers: { "content-type": "text/plain" },
              body: "stored during the flood",
            }) === 200 && await send("/p/bafkfloodupload1") === 200;
        return served;
      },
      "a client served during the flood",
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    assertOk(served);
  } finally {
    for (const connection of flood) connection.socket.destroy();
  }
  const alive = await fetch(`${service.url}/healthz`);
  assertEquals(alive.status, 200);
  await alive.body?.cancel();
  // Said once, with what it did: files keep descriptors below the limit from now on.
  await eventually(
    () => /cannot accept connections[\s\S]*connections are capped below/.test(service.stderr()),
    "the shortage logged",
  );
  await Deno.remove(dataDir, { recursive: true });
});

Deno.test("connections: with --connection-bounds false (Deno.serve) running out of descriptors still does not end the process", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-emfile-serve-" });
  await using service = await spawnWithFewDescriptors(dataDir, ["--connection-bounds", "false"]);
  const flood = await floodOf(service, 400);
  try {
    await eventually(
      () => /the listener stopped accepting/.test(service.stderr()),
      "Deno.serve's accept loop ended by EMFILE, and said so",
    );
  } finally {
    for (const connection of flood) connection.socket.destroy();
  }
  // Bound again once descriptors are back: the process never went away.
  await eventually(
    async () => {
      const response = await fetch(`${service.url}/healthz`).catch(() => null);
      await response?.body?.cancel();
      return response?.status === 200;
    },
    "serving again",
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  await Deno.remove(dataDir, { recursive: true });
});

Deno.test("connections: an answer sent before the body was read ends the connection, though the client keeps it", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "1KiB"] });
  const client = await connectFrom(portOf(server));
  // A declared size over the cap: 413 before a byte of the body is read.
  client.socket.write(
    "POST /api/upload?cid=bafkearlyclose1 HTTP/1.1\r\nHost: x\r\n" +
      "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n",
  );
  await within(client.closing, 5000, "the server closed the connection after its answer");
  assertMatch(client.received(), /^HTTP\/1\.1 413 /);
});
