/**
 * The web page's committed build (src/client/web/assets.gen.ts) is what its source
 * builds to, byte for byte, as for the WASM kernel: a change to src/client/web/app/
 * without a rebuild, or a hand edit of the generated module, fails here.
 */
import { assertOk } from "../helpers/assert.ts";
import { buildWebModule, GENERATED } from "../../scripts/build_web.ts";

Deno.test("web build: src/client/web/assets.gen.ts is what src/client/web/app/ builds to, byte for byte", async () => {
  const built = await buildWebModule();
  const committed = await Deno.readTextFile(GENERATED);
  assertOk(
    built === committed,
    "src/client/web/assets.gen.ts is stale: run `deno task build-web` and commit it",
  );
});
