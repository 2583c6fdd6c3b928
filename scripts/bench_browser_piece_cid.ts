/**
 * Workload 8: PieceCIDv2 of 100 MiB in Chromium, on one Web Worker with the
 * client SDK (what the web page does before an upload), against the
 * server's own one-core rate (PieceHasher in Deno) in the same run, the two
 * alternating so machine noise hits both. The bytes are made before the
 * clock starts on both sides. Also runnable alone:
 *
 *   deno run -A scripts/bench_browser_piece_cid.ts [--runs 3]
 */
import { PieceHasher } from "../src/kernel/piece_cid/hasher.ts";
import { pieceCidV2 } from "../src/kernel/piece_cid/cid_codec.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { scriptArgs } from "./lib/args.ts";
import { bundleForBrowser } from "./lib/bundle.ts";
import { chromiumInstalled, launchChromium } from "./lib/chromium.ts";

const MIB = 1024 * 1024;
const SIZE = 100 * MIB;

export interface BrowserPieceCidResult {
  payloadMiB: number;
  units: string;
  chromiumOneWorker: Summary;
  denoOneCore: Summary;
  ratio: number;
}

/** null when Chromium is not installed. */
export async function benchBrowserPieceCid(runs: number): Promise<BrowserPieceCidResult | null> {
  if (!await chromiumInstalled()) return null;
  const script = await bundleForBrowser(new URL("./bench_browser/page.ts", import.meta.url));
  const html = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bench</title>' +
    '<script type="module" src="/page.js"></script></head><body></body></html>';
  const site = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/page.js") {
      return new Response(script, { headers: { "content-type": "text/javascript" } });
    }
    return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
  });
  const browser = await launchChromium({ timeoutMs: 120_000 });
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(120_000);
    await page.goto(`http://127.0.0.1:${site.addr.port}/`);
    await page.waitForFunction(() => "benchPieceCid" in globalThis);
    const payload = new Uint8Array(SIZE);
    for (let i = 0; i < SIZE; i++) payload[i] = (i * 31 + 7) & 0xff;
    const rates = { chromium: [] as number[], deno: [] as number[] };
    let expected = "";
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      const hasher = new PieceHasher();
      hasher.update(payload);
      const digest = hasher.digest();
      rates.deno.push(SIZE / 1e6 / ((performance.now() - started) / 1000));
      expected = pieceCidV2(digest.root, digest.height, digest.padding);
      const inPage = await page.evaluate(
        ([size]) =>
          (globalThis as unknown as {
            benchPieceCid(size: number, workers: number): Promise<{ cid: string; ms: number }>;
          }).benchPieceCid(size, 1),
        [SIZE] as const,
      );
      if (inPage.cid !== expected) {
        throw new Error(`Chromium computed ${inPage.cid}, Deno ${expected}`);
      }
      rates.chromium.push(SIZE / 1e6 / (inPage.ms / 1000));
    }
    const chromiumOneWorker = summarize(rates.chromium);
    const denoOneCore = summarize(rates.deno);
    return {
      payloadMiB: SIZE / MIB,
      units: "MB/s (10^6 bytes/s)",
      chromiumOneWorker,
      denoOneCore,
      ratio: Math.round((chromiumOneWorker.median / denoOneCore.median) * 100) / 100,
    };
  } finally {
    await browser.close();
    await site.shutdown();
  }
}

if (import.meta.main) {
  const { runs } = scriptArgs(
    "Usage: deno run -A scripts/bench_browser_piece_cid.ts [--runs 3]",
    { runs: { type: "number", default: 3, integer: true, min: 1 } },
  );
  console.log(JSON.stringify(await benchBrowserPieceCid(runs), null, 2));
}
