/**
 * The SDK core bundles for a browser as it is: `deno bundle --platform
 * browser` of src/client/sdk/mod.ts succeeds, and the bundle uses nothing of
 * Deno's or Node's (no Deno.*, no node: module), so the Deno-only helpers
 * (fs.ts, native_sha256.ts) stay out of it. The Chromium test
 * (tests/web/browser_test.ts) runs such a bundle in a page.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { bundleForBrowser } from "../helpers/browser.ts";

Deno.test("bundle: the SDK core bundles for the browser without Deno or Node APIs", async () => {
  const bundle = await bundleForBrowser(new URL("../../src/client/sdk/mod.ts", import.meta.url));
  assertOk(bundle.includes("storage-manifest"), "the bundle is the SDK");
  assertEquals(bundle.match(/\bDeno\.\w+/g), null);
  assertEquals(bundle.match(/["']node:[\w/]+["']/g), null);
  assertEquals(bundle.match(/^\s*import\b.*from\s/gm), null, "nothing left to resolve");
});
