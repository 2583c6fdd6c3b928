/**
 * Debian's Chromium (/usr/bin/chromium) under playwright-core, headless and
 * with nothing that would call out of a closed network on its own: the
 * settings the browser tests and the bench's browser workload share.
 */
import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Whether Chromium is installed where these settings expect it. */
export async function chromiumInstalled(): Promise<boolean> {
  try {
    return (await Deno.stat(CHROMIUM_PATH)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

export function launchChromium(options: { timeoutMs?: number } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    timeout: options.timeoutMs ?? 60_000,
  });
}
