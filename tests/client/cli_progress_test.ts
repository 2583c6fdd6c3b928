/**
 * The CLI's progress bar, driven by a fake clock: at most one redraw per
 * 100 ms however often progress is reported, a rate and ETA from recent
 * progress (redrawn through a stall, never 0 B/s at a pause), a line that
 * fits the terminal, and a clear that leaves nothing; a download's bar is
 * named after its output file (the command in-process, the real server).
 * (That nothing of it appears off a terminal is checked end to end in
 * tests/client/cli_test.ts: every successful command there has an empty stderr.)
 */
import { assertEquals } from "../helpers/assert.ts";
import { formatBytes, ProgressBar, renderLine } from "../../src/client/cli/progress.ts";
import { parseCommandLine } from "../../src/client/cli/args.ts";
import { runCommandLine } from "../../src/client/cli/main.ts";
import type { CliIo } from "../../src/client/cli/output.ts";
import { patternBytes, startTestServer } from "../helpers/server.ts";

const MIB = 1024 * 1024;

function fakeBar(columns = 200) {
  let now = 0;
  const writes: string[] = [];
  const bar = new ProgressBar({
    write: (t) => writes.push(t),
    columns: () => columns,
    now: () => now,
  });
  return { bar, writes, advance: (ms: number) => (now += ms) };
}

Deno.test("progress: redrawn at most 10 times a second, whatever the report rate", () => {
  const { bar, writes, advance } = fakeBar();
  for (let i = 0; i <= 1000; i++) {
    bar.update({ label: "upload a.bin", done: i * MIB, total: 1000 * MIB });
    advance(1); // a report every millisecond, for a second
  }
  assertEquals(writes.length, 11);
  for (const line of writes) {
    assertEquals([line.startsWith("\r"), line.endsWith("\x1b[K"), line.includes("\n")], [
      true,
      true,
      false,
    ]);
  }
});

Deno.test("progress: bytes, percentage, rate and ETA", () => {
  const { bar, writes, advance } = fakeBar();
  bar.update({ label: "upload a.bin", done: 0, total: 100 * MIB });
  for (let second = 1; second <= 2; second++) {
    advance(1000);
    bar.update({
      label: "upload a.bin",
      done: second * 10 * MIB,
      total: 100 * MIB,
      note: "piece 1/2",
    });
  }
  assertEquals(
    writes.at(-1),
    "\rupload a.bin [###-------------]  20% 20.0 MiB/100.0 MiB 10.0 MiB/s ETA 8 s piece 1/2\x1b[K",
  );
});

Deno.test("progress: a line longer than the terminal is cut; clear erases it once", () => {
  const { bar, writes } = fakeBar(30);
  bar.update({ label: "download " + "x".repeat(100), done: 1, total: 2 });
  assertEquals(writes[0].length, "\r".length + 29 + "\x1b[K".length);
  bar.clear();
  bar.clear();
  assertEquals(writes.slice(1), ["\r\x1b[K"]);
});

Deno.test("progress: an unknown total shows bytes only", () => {
  assertEquals(
    renderLine({ label: "download", done: 1536, total: null }, null),
    "download 1.5 KiB",
  );
  assertEquals(formatBytes(512), "512 B");
  assertEquals(formatBytes(1024 ** 3), "1.00 GiB");
});

Deno.test("progress: at 80 columns a long upload line keeps its rate and ETA", () => {
  const { bar, writes, advance } = fakeBar(80);
  const label = "upload my-holiday-video-2026-the-final-cut-with-subtitles.mp4";
  const note = "hashed 64%, piece 3/12";
  bar.update({ label, done: 0, total: 1200 * MIB, note });
  advance(1000);
  bar.update({ label, done: 30 * MIB, total: 1200 * MIB, note });
  const line = writes.at(-1)!.slice(1, -"\x1b[K".length);
  assertEquals(line.length <= 79, true, `${line.length} columns: ${line}`);
  assertEquals(line.includes("30.0 MiB/s"), true, line);
  assertEquals(line.includes("ETA 39 s"), true, line);
  assertEquals(line.startsWith("upload my-holiday"), true, line);
  assertEquals(line.includes("subtitles.mp4"), true, "the name is cut in the middle");
});

Deno.test("progress: during a stall the bar is redrawn, the ETA grows, then it says stalled", () => {
  const { bar, writes, advance } = fakeBar();
  bar.update({ label: "upload a.bin", done: 0, total: 100 * MIB });
  advance(1000);
  bar.update({ label: "upload a.bin", done: 10 * MIB, total: 100 * MIB });
  assertEquals(
    writes.at(-1),
    "\rupload a.bin [##--------------]  10% 10.0 MiB/100.0 MiB 10.0 MiB/s ETA 9 s\x1b[K",
  );
  advance(1000); // nothing reported: the terminal's timer ticks
  bar.tick();
  assertEquals(
    writes.at(-1),
    "\rupload a.bin [##--------------]  10% 10.0 MiB/100.0 MiB 5.0 MiB/s ETA 18 s\x1b[K",
  );
  advance(4000);
  bar.tick();
  assertEquals(
    writes.at(-1),
    "\rupload a.bin [##--------------]  10% 10.0 MiB/100.0 MiB stalled\x1b[K",
  );
});

Deno.test("progress: a pause (the server taking a piece) or progress that goes back shows no 0 B/s", () => {
  const { bar, writes, advance } = fakeBar();
  // 30 MiB/s, then a piece's bytes partly sent again (60 → 50), then a 2 s pause.
  for (const done of [0, 30, 60, 50, 50, 50]) {
    bar.update({ label: "upload a.bin", done: done * MIB, total: 100 * MIB });
    advance(1000);
  }
  bar.tick();
  for (const line of writes) assertEquals(line.includes("0 B/s"), false, line);
  // The ETA goes on from the average so far: 50 MiB in 6 s.
  assertEquals(
    writes.at(-1),
    "\rupload a.bin [########--------]  50% 50.0 MiB/100.0 MiB ETA 6 s\x1b[K",
  );
});

Deno.test("progress: a download's bar is labelled with the file it writes, not the cid", async () => {
  await using server = await startTestServer();
  const bytes = patternBytes(300_000, 9);
  const uploaded = await server.upload("progresslabel01", bytes);
  assertEquals(uploaded.status, 200);
  await uploaded.body?.cancel();
  const dir = await Deno.makeTempDir({ prefix: "cli-progress-label-" });
  try {
    const labels = new Set<string>();
    const io: CliIo = {
      out: () => Promise.resolve(),
      stdoutBytes: new WritableStream(),
      err: () => {},
      progress: { update: (state) => labels.add(state.label), clear: () => {} },
      signal: new AbortController().signal,
    };
    const line = parseCommandLine(
      ["download", "progresslabel01", "-o", `${dir}/report.pdf`, "--server", server.url],
      {},
    );
    if (line.kind !== "run") throw new Error("expected a command");
    assertEquals(await runCommandLine(line, io), 0);
    assertEquals([...labels], ["download report.pdf"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
