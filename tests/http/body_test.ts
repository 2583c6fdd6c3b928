import { assertEquals } from "../helpers/assert.ts";
import { MAX_JSON_BODY_BYTES, readJsonObject } from "../../src/http/pipeline/body.ts";
import { ApiError } from "../../src/kernel/errors.ts";

async function codeOf(request: Request): Promise<string> {
  try {
    await readJsonObject(request, { idleTimeoutMs: 5_000 });
    return "ok";
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
}

const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  new Request("http://x/", { method: "POST", body, headers });

Deno.test("json body: an object is read", async () => {
  assertEquals(await readJsonObject(post('{"a":1}'), { idleTimeoutMs: 5_000 }), { a: 1 });
});

Deno.test("json body: over 64 KiB is 413 too_large, declared or streamed", async () => {
  const big = JSON.stringify({ a: "x".repeat(MAX_JSON_BODY_BYTES) });
  assertEquals(await codeOf(post(big)), "too_large");
  const streamed = ReadableStream.from([new TextEncoder().encode(big)]);
  assertEquals(await codeOf(post(streamed)), "too_large");
});

Deno.test("json body: malformed JSON, non-objects and bad UTF-8 are invalid_json", async () => {
  assertEquals(await codeOf(post("{nope")), "invalid_json");
  assertEquals(await codeOf(post("[1,2]")), "invalid_json");
  assertEquals(await codeOf(post("null")), "invalid_json");
  assertEquals(await codeOf(post(new Uint8Array([0x7b, 0xff, 0x7d]))), "invalid_json");
  assertEquals(await codeOf(post("")), "invalid_json");
});

Deno.test("json body: a body that stops arriving is 408 request_timeout after the idle time", async () => {
  const encoder = new TextEncoder();
  // Sends the start of an object, then nothing: the stream never ends.
  const stalled = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"email":'));
    },
  });
  const started = performance.now();
  try {
    await readJsonObject(post(stalled), { idleTimeoutMs: 200 });
    throw new Error("a stalled body was read");
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    assertEquals([error.code, error.headers.connection], ["request_timeout", "close"]);
  }
  assertEquals(performance.now() - started >= 190, true, "not before the idle time");
});
