/**
 * A client that does not read is cut off (decisions: "Holding up, second
 * pass"): an answer whose client takes nothing for the idle timeout is
 * closed, and when every connection slot is held by answers their clients do
 * not take, a new client on another address is still served (before: 40
 * unread GETs from 4 addresses kept every newcomer out for 130 s). Clients
 * are 127.0.0.x source addresses; the answers are larger than the socket
 * buffers, so the server's writes back up.
 */
import { assertEquals } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { requestUnread } from "../helpers/unread_answer.ts";
import type { UnreadAnswer } from "../helpers/unread_answer.ts";
import { eventually, within } from "../helpers/wait.ts";
import { sentFromResource, streamedBody } from "../../src/net/serve_connection.ts";
import { SendMeter } from "../../src/net/send_meter.ts";

const LARGE = seededBytes(32 * 1024 * 1024, 33);

async function storedLarge(server: TestServer): Promise<string> {
  const cid = "bafkslowreaders1";
  const response = await server.upload(cid, LARGE);
  assertEquals(response.status, 200, await response.text());
  return `/p/${cid}`;
}

/** The unread answer is counted as a slow reader, and its connection ends before its last byte. */
async function expectCutOff(server: TestServer, unread: UnreadAnswer, status: number) {
  try {
    assertEquals(await unread.status, status);
    await eventually(
      () => server.server.connections()?.slowReaders === 1,
      "the unread answer counted as a slow reader",
      { timeoutMs: 15_000 },
    );
    // Read on: the connection ends before the whole answer (the server closed it).
    const received = await within(unread.readToClose(), 10_000, "the connection's close");
    assertEquals(received < LARGE.length, true, `${received} bytes of ${LARGE.length}`);
  } finally {
    unread.close();
  }
}

Deno.test("slow readers: under pressure, an answer its client stops taking is closed after the idle timeout", async () => {
  // One connection is half of what a client may hold: pressure, so every answer is metered.
  await using server = await startTestServer({
    args: ["--body-idle-timeout", "1", "--max-connections-per-client", "2"],
  });
  const path = await storedLarge(server);
  // A bounded range, which Deno sends from its file like a whole piece when not metered.
  const unread = await requestUnread({
    port: server.server.port,
    path,
    headers: [`Range: bytes=5-${LARGE.length - 2}`],
  });
  await expectCutOff(server, unread, 206);
});

Deno.test("slow readers: a metered body stops at its answer's length, the rest of its source cancelled", async () => {
  // A body that runs on past its answer's Content-Length (a range sent from its file): metered,
  // it ends where Deno's server would have cut it, and the file is let go.
  let cancelled = false;
  let pulls = 0;
  const source = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      controller.enqueue(new Uint8Array(1000).fill(7));
      if (++pulls === 10) controller.close(); // 10,000 bytes: four times the answer's length
    },
    cancel: () => void (cancelled = true),
  });
  const meter = new SendMeter();
  const bytes = new Uint8Array(await new Response(meter.wrap(source, 2500)).arrayBuffer());
  assertEquals(bytes, new Uint8Array(2500).fill(7));
  assertEquals([meter.sent, cancelled], [2500, true]);
});

Deno.test("slow readers: a whole piece sent from its file must end within what --send-min-rate allows for its length", async () => {
  await using server = await startTestServer({
    args: ["--send-min-rate", "16MiB", "--body-rate-grace", "1"],
  });
  const path = await storedLarge(server); // 32 MiB at 16 MiB/s: 2 s
  const unread = await requestUnread({ port: server.server.port, path });
  await expectCutOff(server, unread, 200);
});

Deno.test("slow readers: the internals read: an open file's readable is sent from its resource (metered only under pressure), a static body is not a stream", async () => {
  const file = await Deno.makeTempFile();
  try {
    const opened = await Deno.open(file);
    const readable = opened.readable;
    assertEquals(sentFromResource(readable), true);
    await readable.cancel();
    assertEquals(sentFromResource(ReadableStream.from([new Uint8Array(1)])), false);
    // A static body stays static (Deno sends its length); a stream is a stream.
    const stream = ReadableStream.from([new Uint8Array(1)]);
    assertEquals(streamedBody(new Response(stream)), stream);
    assertEquals(streamedBody(new Response("static")), null);
    assertEquals(streamedBody(new Response(null, { status: 204 })), null);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("slow readers: with every slot held by unread answers, a client on another address is served", async () => {
  await using server = await startTestServer({
    args: [
      "--max-connections",
      "4",
      "--max-connections-per-client",
      "8",
      "--body-rate-grace",
      "1",
    ],
  });
  const path = await storedLarge(server);
  const port = server.server.port;
  const held: UnreadAnswer[] = [];
  using other = Deno.createHttpClient({ localAddress: "127.0.0.2" });
  try {
    // One after the other, each answering: a connection that has sent nothing yet is evicted first.
    for (let i = 0; i < 4; i++) {
      held.push(await requestUnread({ port, path }));
      assertEquals(await held[i].status, 200);
    }
    let served = 0;
    await eventually(
      async () => {
        try {
          const health = await fetch(`${server.url}/healthz`, { client: other });
          await health.body?.cancel();
          if (health.ok) served++;
        } catch {
          // Refused at the cap: every answer was still moving.
        }
        return served > 0;
      },
      "a newcomer on 127.0.0.2 served at the cap",
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    assertEquals(server.server.connections()!.evicted >= 1, true, "a stalled answer made room");
  } finally {
    for (const h of held) h.close();
  }
});
