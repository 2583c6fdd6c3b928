/**
 * CI installs every Debian tool the tests run. A fresh machine has only what .ci/run installs, so
 * a tool missing from its list passes on the machine where someone installed it by hand and fails
 * on every new one (ffmpeg did). Each tool of tests/helpers/debian_tools.ts must be checked for
 * by its path and its package added to the install list.
 */
import { assertEquals } from "../helpers/assert.ts";
import { DEBIAN_TOOLS } from "../helpers/debian_tools.ts";

const CI_RUN = new URL("../../.ci/run", import.meta.url);

/** The packages .ci/run may install: every word of its `missing+=(...)` lines. */
function installedByCi(script: string): Set<string> {
  const packages = new Set<string>();
  for (const match of script.matchAll(/missing\+=\(([^)]*)\)/g)) {
    for (const name of match[1].trim().split(/\s+/)) packages.add(name);
  }
  return packages;
}

Deno.test("CI: .ci/run installs the Debian package of every tool the tests run", async () => {
  const script = await Deno.readTextFile(CI_RUN);
  const packages = installedByCi(script);
  const missing = Object.entries(DEBIAN_TOOLS)
    .filter(([_, tool]) => !packages.has(tool.package))
    .map(([name, tool]) => `${name} (package ${tool.package})`);
  assertEquals(missing, [], "tools .ci/run never installs");
});

Deno.test("CI: .ci/run checks for each tool where the tests look for it", async () => {
  const script = await Deno.readTextFile(CI_RUN);
  const unchecked = Object.entries(DEBIAN_TOOLS)
    .filter(([name, tool]) => !script.includes(tool.path) && !script.includes(`command -v ${name}`))
    .map(([name]) => name);
  assertEquals(unchecked, [], "tools .ci/run does not look for");
});
