/**
 * `deno bundle` for the browser (the deno running this script): one ES module
 * with everything the entry imports. Used by the web page's build and by the
 * bench's browser page; tests bundle their fixtures the same way.
 */
export async function bundleForBrowser(
  entry: URL,
  options: { minify?: boolean } = {},
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "browser-bundle-" });
  try {
    const output = `${dir}/bundle.js`;
    await runDeno([
      "bundle",
      "--quiet",
      ...(options.minify ? ["--minify"] : []),
      "--platform",
      "browser",
      "--format",
      "esm",
      "-o",
      output,
      entry.href,
    ]);
    return await Deno.readTextFile(output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs a deno subcommand; throws with its stderr when it fails. */
export async function runDeno(args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  if (code !== 0) {
    throw new Error(`deno ${args[0]} failed:\n${new TextDecoder().decode(stderr)}`);
  }
}
