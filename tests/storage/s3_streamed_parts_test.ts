/**
 * A resumable upload's append streams its part to the bucket while the body
 * is still arriving (partial_writer.ts, streamed_put.ts), on a real radosgw
 * seen through a TCP relay on 127.0.0.1 that counts the bytes sent to it: the
 * body holds back its last MiB until the relay has carried the bytes before
 * it, which happens only if the part's PUT streams. A body cut after that
 * keeps what arrived, as without streaming.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB } from "../helpers/bytes.ts";
import { patternBytes } from "../helpers/server.ts";
import { s3Test } from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { eventually } from "../helpers/wait.ts";
import { S3Store } from "../../src/driver/s3/s3_store.ts";

const PART = 8 * MIB;

interface CountingRelay extends AsyncDisposable {
  url: string;
  /** Bytes the driver sent through the relay so far. */
  sent(): number;
}

/** Relays 127.0.0.1 connections to the bucket's endpoint, counting the bytes sent upstream. */
function countingRelay(endpoint: string): CountingRelay {
  const upstream = new URL(endpoint);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const pumps: Promise<void>[] = [];
  let sent = 0;
  const counting = () =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
  const accepting = (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({
        hostname: upstream.hostname,
        port: Number(upstream.port),
      });
      open.add(client).add(server);
      pumps.push(
        client.readable.pipeThrough(counting()).pipeTo(server.writable).catch(() => {}),
        server.readable.pipeTo(client.writable).catch(() => {}),
      );
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    sent: () => sent,
    [Symbol.asyncDispose]: async () => {
      listener.close();
      await accepting;
      for (const conn of open) {
        try {
          conn.close();
        } catch {
          // already closed by its pump
        }
      }
      await Promise.all(pumps);
    },
  };
}

/** A body of `bytes` that sends all but its last MiB, waits for `release`, then the rest or a cut. */
function heldBody(
  bytes: Uint8Array,
  release: Promise<"rest" | "cut">,
): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset === bytes.byteLength - MIB && await release === "cut") {
        return controller.error(new Error("the client went away"));
      }
      const end = Math.min(offset + MIB, bytes.byteLength);
      controller.enqueue(bytes.slice(offset, end));
      offset = end;
      if (offset === bytes.byteLength) controller.close();
    },
  });
}

async function appendHeld(s3: TestBucket, ending: "rest" | "cut") {
  await using relay = countingRelay(s3.endpoint);
  const store = new S3Store({ ...s3, endpoint: relay.url, partSizeBytes: PART });
  const id = crypto.randomUUID().replaceAll("-", "");
  const state = await store.partials.create(id, { length: PART });
  const bytes = patternBytes(PART);
  let release: (ending: "rest" | "cut") => void = () => {};
  const released = new Promise<"rest" | "cut">((resolve) => release = resolve);
  const appending = store.partials.append(state, heldBody(bytes, released), {
    expectedBytes: PART,
  });
  try {
    await eventually(
      () => relay.sent() >= PART - MIB,
      "the part's first 7 MiB in the bucket's PUT while the body holds its last",
      { timeoutMs: 20_000 },
    );
  } finally {
    release(ending);
  }
  const appended = await appending;
  const stored = new Uint8Array(
    await new Response(store.partials.read(appended.state, { from: 0, to: appended.state.size }))
      .arrayBuffer(),
  );
  await store.partials.remove(id);
  return { appended, bytes, stored };
}

s3Test(
  "s3 partials: an append's part streams to the bucket while its body is still arriving",
  async (s3) => {
    const { appended, bytes, stored } = await appendHeld(s3, "rest");
    assertEquals(appended.cut, null);
    assertEquals(appended.state.size, PART);
    assertOk(stored.every((byte, i) => byte === bytes[i]), "the part holds the body's bytes");
  },
);

s3Test("s3 partials: a body cut while its part streams keeps what arrived", async (s3) => {
  const { appended, bytes, stored } = await appendHeld(s3, "cut");
  assertOk(appended.cut !== null, "the append says the body was cut");
  assertEquals(appended.state.size, PART - MIB);
  assertOk(stored.every((byte, i) => byte === bytes[i]), "what arrived is stored as it came");
});
