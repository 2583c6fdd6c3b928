/**
 * The stderr logger (src/kernel/log.ts), each promise of its header checked on a
 * recording output: every line written once and in order, lines batched into
 * few writes (and a lone line written by the timer, without a flush), one write
 * in flight at a time, logging never blocked by a stalled output but bounded
 * (the excess dropped, counted, and said after what was kept), a failing
 * output never thrown into the caller, and `flush` resolving only once all is
 * written.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import { createStderrLogger } from "../../src/kernel/log.ts";
import type { LogOutput } from "../../src/kernel/log.ts";

const BATCH_BYTES = 65_536;

/**
 * An output that records each write it is given (and each it has begun), and
 * how many were in flight at once. While held, a write waits for `release`.
 */
function recordingOutput(options: { held?: boolean } = {}) {
  const writes: string[] = [];
  let begun = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  let gate = Promise.withResolvers<void>();
  if (!options.held) gate.resolve();
  const output: LogOutput = {
    async write(bytes) {
      begun++;
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      await gate.promise;
      writes.push(new TextDecoder().decode(bytes));
      inFlight--;
      return bytes.byteLength;
    },
  };
  return {
    output,
    writes,
    begun: () => begun,
    mostInFlight: () => mostInFlight,
    /** Every line written so far, parsed, across writes. */
    lines: () => linesOf(writes.join("")),
    release() {
      gate.resolve();
    },
    hold() {
      gate = Promise.withResolvers<void>();
    },
  };
}

function linesOf(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((line) => line).map((line) => JSON.parse(line));
}

Deno.test("log: every line is written once, in order, by the time flush resolves", async () => {
  const out = recordingOutput();
  const logger = createStderrLogger({ output: out.output });
  for (let i = 0; i < 5000; i++) logger.info("request", { n: i }); // several 64 KiB batches
  logger.raw!(`"level":"info","msg":"request","n":5000`);
  await logger.flush();
  const lines = out.lines();
  assertEquals(lines.map((l) => l.n), Array.from({ length: 5001 }, (_, i) => i));
  assertEquals(typeof lines[0].time, "string");
  // Nothing was left for later: another flush writes nothing more.
  const writes = out.writes.length;
  await logger.flush();
  assertEquals(out.writes.length, writes);
});

Deno.test("log: lines go out in batches: a write starts once 64 KiB wait, not one write a line", async () => {
  const out = recordingOutput({ held: true });
  const logger = createStderrLogger({ output: out.output });
  let logged = 0;
  while (out.begun() === 0 && logged < 10_000) logger.info("request", { n: logged++ });
  // The lines logged while that write is in flight gather into the next one.
  for (let i = 0; i < 3000; i++) logger.info("request", { n: logged++ });
  assertEquals(out.begun(), 1);
  out.release();
  await logger.flush();
  assertEquals(out.writes.length, 2);
  const [first] = out.writes;
  const lastLine = first.slice(first.lastIndexOf("\n", first.length - 2) + 1);
  assertOk(
    first.length >= BATCH_BYTES && first.length - lastLine.length < BATCH_BYTES,
    `the first write began at 64 KiB: it holds ${first.length} bytes`,
  );
  assertEquals(out.lines().map((l) => l.n), Array.from({ length: logged }, (_, i) => i));
  for (const write of out.writes) assertOk(write.endsWith("\n"), "a write ends on a whole line");
});

Deno.test("log: lines logged together are written by the timer, in one write, without a flush", async () => {
  const out = recordingOutput();
  const logger = createStderrLogger({ output: out.output });
  logger.info("one");
  logger.warn("two");
  logger.error("three");
  assertEquals(out.begun(), 0, "no write per line: the batch waits for its timer");
  await eventually(() => out.writes.length > 0, "the timer's write");
  assertEquals(out.writes.length, 1);
  assertEquals(linesOf(out.writes[0]).map((l) => [l.level, l.msg]), [
    ["info", "one"],
    ["warn", "two"],
    ["error", "three"],
  ]);
});

Deno.test("log: one write at a time; lines logged while it is in flight follow in the next", async () => {
  const out = recordingOutput({ held: true });
  const logger = createStderrLogger({ output: out.output });
  logger.info("first");
  const flushing = logger.flush();
  assertEquals(out.begun(), 1, "flush starts the write");
  logger.info("second");
  logger.info("third");
  const flushingAgain = logger.flush();
  assertEquals(out.begun(), 1, "no second write while the first is in flight, flushed or not");
  out.release();
  await Promise.all([flushing, flushingAgain]);
  assertEquals(out.mostInFlight(), 1);
  assertEquals(out.writes.map((write) => linesOf(write).map((l) => l.msg)), [
    ["first"],
    ["second", "third"],
  ]);
});

Deno.test("log: a stalled output never blocks logging; memory is bounded, the excess dropped and counted", async () => {
  const out = recordingOutput({ held: true });
  const maxPendingChars = 10_000;
  const logger = createStderrLogger({ output: out.output, maxPendingChars });
  for (let i = 0; i < 2000; i++) logger.info("request", { n: i });
  assertEquals(out.writes.length, 0, "2000 lines logged while the output took nothing");
  out.release();
  await logger.flush();
  const text = out.writes.join("");
  const lines = linesOf(text);
  const kept = lines.filter((l) => l.msg === "request");
  const notices = lines.filter((l) => l.msg === "log lines dropped: the output was too slow");
  assertEquals(notices.length, 1, "one notice says how many were dropped");
  assertEquals(lines.at(-1), notices[0], "the notice follows the lines that were kept");
  assertEquals(kept.length + Number(notices[0].dropped), 2000);
  // What was kept is the beginning, in order, and no more than the bound (and one line) held.
  assertEquals(kept.map((l) => l.n), Array.from({ length: kept.length }, (_, i) => i));
  const keptChars = text.length - JSON.stringify(notices[0]).length - 1;
  const lineChars = keptChars / kept.length;
  assertOk(keptChars <= maxPendingChars + lineChars, `${keptChars} characters were held`);
  // Once the output keeps up, nothing more is dropped.
  logger.info("after");
  await logger.flush();
  assertEquals(out.lines().at(-1)?.msg, "after");
});

Deno.test("log: an output that fails never throws into the caller, and the next lines still go out", async () => {
  const written: string[] = [];
  let calls = 0;
  const logger = createStderrLogger({
    output: {
      write(bytes) {
        if (++calls === 1) return Promise.reject(new Error("stderr closed"));
        written.push(new TextDecoder().decode(bytes));
        return Promise.resolve(bytes.byteLength);
      },
    },
  });
  logger.error("lost with the failed write");
  await logger.flush();
  logger.warn("written");
  await logger.flush();
  assertEquals(calls, 2);
  assertEquals(linesOf(written.join("")).map((l) => l.msg), ["written"]);
});
