/**
 * A split video plays and seeks in the browser's own player, from /f/: a
 * WebM made at test time with Debian's ffmpeg is uploaded through the web
 * page (which splits it into pieces and a manifest, as the CLI and the SDK
 * do, because it is over the per-file cap), the page previews it in a
 * <video> whose source is the file's /f/ URL, and Chromium plays it, seeks to
 * the middle and plays on. The server's log shows the player's range
 * requests to /f/.
 */
import { Buffer } from "node:buffer";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { withBrowser } from "../helpers/browser.ts";
import { ignoredWithout, requireTool } from "../helpers/debian_tools.ts";
import { startTestServer } from "../helpers/server.ts";

const SECONDS = 40;
const PIECE_CAP = 4 * 1024 * 1024;
/** The SDK's HEAD /p/{cid} before sending each piece answers 404 (not stored yet): expected. */
const PIECE_CHECK_404 =
  /status of 404 \(Not Found\) \(at http:\/\/127\.0\.0\.1:\d+\/p\/[a-z0-9]+\)$/;
const ignore = ignoredWithout("video test", "ffmpeg");

/**
 * Forty seconds of test pattern under noise (so it does not compress away) and a tone, as WebM
 * (VP8, Vorbis) of about 15 MB: more than Chromium buffers ahead of where it plays, so a seek to
 * the middle must ask the server for a range there.
 */
async function makeVideo(path: string): Promise<void> {
  const { code, stderr } = await new Deno.Command(requireTool("ffmpeg"), {
    args: [
      ...["-hide_banner", "-loglevel", "error", "-y"],
      ...["-f", "lavfi", "-i", `testsrc=duration=${SECONDS}:size=320x240:rate=25`],
      ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${SECONDS}`],
      ...["-vf", "noise=alls=40:allf=t", "-c:v", "libvpx", "-b:v", "3M", "-minrate", "3M"],
      ...["-maxrate", "3M", "-deadline", "realtime", "-cpu-used", "8", "-g", "25"],
      ...["-c:a", "libvorbis", "-shortest", path],
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (code !== 0) throw new Error(`ffmpeg failed: ${new TextDecoder().decode(stderr)}`);
}

Deno.test({
  name: "video: a split video plays from /f/ in Chromium and seeks to the middle",
  ignore,
  async fn() {
    // Under a cap of 4 MiB per file, the video goes up in pieces and a manifest.
    await using server = await startTestServer({
      args: ["--sponsored-max-file-size", String(PIECE_CAP), "--sponsored-daily-cap", "1GiB"],
    });
    const dir = await Deno.makeTempDir({ prefix: "video-test-" });
    try {
      await makeVideo(`${dir}/clip.webm`);
      const bytes = await Deno.readFile(`${dir}/clip.webm`);
      assertOk(bytes.length > 3 * PIECE_CAP, `the video is ${bytes.length} bytes`);
      const watched = await withBrowser(async (page) => {
        await page.goto(server.url);
        await page.locator("#file-input").setInputFiles({
          name: "clip.webm",
          mimeType: "video/webm",
          buffer: Buffer.from(bytes),
        });
        const item = page.locator(".upload-item", { hasText: "clip.webm" });
        await item.locator(".upload-state", { hasText: "pieces and a manifest" }).waitFor();
        const video = item.locator("video");
        const src = await video.getAttribute("src");
        return {
          src,
          played: await video.evaluate(playThenSeekToTheMiddle),
        };
      }, { allowErrors: [PIECE_CHECK_404] });
      assertOk(/\/f\/bafkzcib[a-z0-9]+$/.test(watched.src ?? ""), `src ${watched.src}`);
      const { duration, before, afterSeek, playedOn } = watched.played;
      assertOk(Math.abs(duration - SECONDS) < 0.5, `duration ${duration}`);
      assertOk(before > 0, `it played before the seek (${before} s)`);
      assertOk(Math.abs(afterSeek - duration / 2) < 0.5, `seeked to ${afterSeek} s`);
      assertOk(playedOn > afterSeek, `it played on after the seek (${playedOn} s)`);

      // The player asked /f/ for ranges, beyond the start of the file (its seek).
      const cid = watched.src!.split("/f/")[1];
      const ranged = server.logs.filter((line) =>
        line.msg === "request" && line.route === "/f/:cid" && line.status === 206
      );
      assertOk(ranged.length > 0, "range requests reached /f/");
      const starts = ranged.map((line) => Number(String(line.range).split("-")[0]));
      assertOk(starts.some((start) => start > 0), `ranges asked: ${ranged.map((l) => l.range)}`);
      const manifest = await (await fetch(`${server.url}/p/${cid}`)).json();
      assertOk(manifest.pieces.length >= 4, `${manifest.pieces.length} pieces`);
      assertEquals(manifest.size, bytes.length);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * Runs in the page: plays (muted, as autoplay allows), waits until time passes, seeks to the
 * middle, waits for the seek and for time to pass again. Bounded by each wait's own timeout.
 */
async function playThenSeekToTheMiddle(element: unknown) {
  // The page's <video>; this file is type-checked without the DOM's types.
  const video = element as EventTarget & {
    muted: boolean;
    readyState: number;
    currentTime: number;
    duration: number;
    play(): Promise<void>;
  };
  const event = (name: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${name} within 20 s`)), 20_000);
      video.addEventListener(name, () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  const timePasses = async (from: number) => {
    while (video.currentTime <= from + 0.2) await event("timeupdate");
  };
  video.muted = true;
  if (video.readyState < 1) await event("loadedmetadata");
  await video.play();
  await timePasses(0);
  const before = video.currentTime;
  const seeked = event("seeked");
  video.currentTime = video.duration / 2;
  await seeked;
  const afterSeek = video.currentTime;
  await timePasses(afterSeek);
  return { duration: video.duration, before, afterSeek, playedOn: video.currentTime };
}
