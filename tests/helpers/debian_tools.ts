/**
 * The Debian tools the suite runs for real, each with the package it comes from.
 *
 * Why one table: CI runs on a fresh machine, and a tool that was installed there by hand once
 * (ffmpeg) passed on the machine that had it and failed on every new one. `.ci/run` installs
 * these packages; `tests/project/ci_installs_test.ts` fails when a package here is missing from
 * its install list, and a test whose tool is absent says which package to install.
 *
 * On a developer's machine a missing tool ignores the tests that need it (warned once); in CI
 * (CI=true), where .ci/run installs them all, the tests run and a missing tool fails them.
 */

/** A command the tests run, where Debian installs it, and from which package. */
export interface DebianTool {
  path: string;
  package: string;
}

export const DEBIAN_TOOLS = {
  ffmpeg: { path: "/usr/bin/ffmpeg", package: "ffmpeg" },
  nginx: { path: "/usr/sbin/nginx", package: "nginx" },
  openssl: { path: "/usr/bin/openssl", package: "openssl" },
  prometheus: { path: "/usr/bin/prometheus", package: "prometheus" },
  "systemd-analyze": { path: "/usr/bin/systemd-analyze", package: "systemd" },
  chromium: { path: "/usr/bin/chromium", package: "chromium" },
} as const satisfies Record<string, DebianTool>;

export type ToolName = keyof typeof DEBIAN_TOOLS;

function installed(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** "ffmpeg (apt-get install ffmpeg)" for each tool of `names` that is not installed. */
export function missingTools(...names: ToolName[]): string[] {
  return names
    .filter((name) => !installed(DEBIAN_TOOLS[name].path))
    .map((name) => `${name} (apt-get install ${DEBIAN_TOOLS[name].package})`);
}

/**
 * Whether tests needing `names` are ignored here: only outside CI, when one is missing. Warns
 * once per call with the packages to install, so a developer sees what they are not running.
 */
export function ignoredWithout(what: string, ...names: ToolName[]): boolean {
  const missing = missingTools(...names);
  if (missing.length === 0 || Deno.env.get("CI") === "true") return false;
  console.warn(`${what} ignored: not installed: ${missing.join(", ")}`);
  return true;
}

/** The tool's path, or an error naming its Debian package (a test's first line in CI). */
export function requireTool(name: ToolName): string {
  const missing = missingTools(name);
  if (missing.length > 0) {
    throw new Error(
      `${DEBIAN_TOOLS[name].path} is missing: ${missing[0]}; .ci/run installs it on CI`,
    );
  }
  return DEBIAN_TOOLS[name].path;
}
