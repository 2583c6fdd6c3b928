/**
 * The web page on a server that hands pieces to a storage provider (the fake
 * Curio of tests/helpers/fake_pdp/): in Chromium, "Your files" shows each
 * file's hand-off state and, once live, its data set and piece ids on chain.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { withBrowser } from "../helpers/browser.ts";
import { startFakePdp } from "../helpers/fake_pdp/mod.ts";
import { FAST_PDP, handoffOnceSettled, startHandoffServer } from "../helpers/handoff.ts";
import { bearer, patternBytes, signup } from "../helpers/server.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";

Deno.test("web: Your files shows each file's hand-off state and its on-chain ids", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token, email } = await signup(server);
  const bytes = patternBytes(4000, 11);
  const result = await (await server.upload(pieceCidOf(bytes), bytes, {
    headers: bearer(token),
    filename: "report.bin",
  })).json();
  const handoff = await handoffOnceSettled(server, token, result.dealId, (h) => h.state === "live");
  await withBrowser(async (page) => {
    await page.goto(`${server.url}/`);
    await page.locator("body[data-ready]").waitFor();
    await page.getByLabel("Token", { exact: true }).fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#session-who", { hasText: email }).waitFor();
    const heading = page.getByRole("columnheader", { name: "Storage provider" });
    await heading.waitFor();
    const cell = page.locator(`tr[data-deal="${result.dealId}"] td[data-handoff]`);
    assertEquals(await cell.getAttribute("data-handoff"), "live");
    const text = await cell.innerText();
    assertMatch(text, /Stored and proven on chain/);
    assertMatch(text, new RegExp(`data set ${handoff.dataSetId}, piece ${handoff.pieceId}`));
  });
});
