/** The stderr logger: batched, asynchronous, ordered, bounded when its output is slow. */
import { assertEquals } from "../helpers/assert.ts";
import { createStderrLogger } from "../../src/log.ts";
import type { LogOutput } from "../../src/log.ts";

/** An output that records what it is given; each write waits until `release` when held. */
function recordingOutput(options: { held?: boolean } = {}) {
  const written: string[] = [];
  let gate = Promise.withResolvers<void>();
  if (!options.held) gate.resolve();
  const output: LogOutput = {
    async write(bytes) {
      await gate.promise;
      written.push(new TextDecoder().decode(bytes));
      return bytes.byteLength;
    },
  };
  return {
    output,
    lines: () => written.join("").split("\n").filter((l) => l).map((l) => JSON.parse(l)),
    release() {
      gate.resolve();
    },
    hold() {
      gate = Promise.withResolvers<void>();
    },
  };
}

Deno.test("log: every line is written, in order, once flushed", async () => {
  const out = recordingOutput();
  const logger = createStderrLogger({ output: out.output });
  for (let i = 0; i < 5000; i++) logger.info("request", { n: i }); // several 64 KiB batches
  logger.raw!(`"level":"info","msg":"request","n":5000`);
  await logger.flush();
  const lines = out.lines();
  assertEquals(lines.length, 5001);
  assertEquals(lines.map((l) => l.n), Array.from({ length: 5001 }, (_, i) => i));
  assertEquals(typeof lines[0].time, "string");
});

Deno.test("log: a stalled output never blocks logging; the excess is dropped and counted", async () => {
  const out = recordingOutput({ held: true });
  const logger = createStderrLogger({ output: out.output, maxPendingChars: 10_000 });
  for (let i = 0; i < 2000; i++) logger.info("request", { n: i }); // returns at once
  out.release();
  await logger.flush();
  const lines = out.lines();
  const dropped = lines.find((l) => l.msg === "log lines dropped: the output was too slow");
  const kept = lines.filter((l) => l.msg === "request");
  assertEquals(kept.length + dropped!.dropped, 2000);
  assertEquals(kept.length < 2000, true);
  // What was kept is the beginning, in order.
  assertEquals(kept.map((l) => l.n), Array.from({ length: kept.length }, (_, i) => i));
});

Deno.test("log: lines logged while a write is in flight follow it", async () => {
  const out = recordingOutput();
  const logger = createStderrLogger({ output: out.output });
  logger.info("first");
  const flushing = logger.flush();
  out.hold();
  logger.info("second");
  out.release();
  await flushing;
  await logger.flush();
  assertEquals(out.lines().map((l) => l.msg), ["first", "second"]);
});

Deno.test("log: an output that fails never throws into the caller", async () => {
  const logger = createStderrLogger({
    output: { write: () => Promise.reject(new Error("stderr closed")) },
  });
  logger.error("still fine");
  await logger.flush();
  logger.warn("and again");
  await logger.flush();
});
