/**
 * openssl for the tests that make their own certificates (nginx's TLS in
 * tests/helpers/nginx.ts, the server's own in tests/deploy/tls_test.ts): a
 * command written as the command line an operator would type, so what it
 * asks openssl for reads at a glance instead of as a column of flags.
 */
import { requireTool } from "./debian_tools.ts";

/**
 * Runs openssl with `commandLine` split at its spaces (so no argument in it
 * may hold one), then `more` arguments as they are; throws with openssl's
 * stderr when it fails.
 */
export async function openssl(commandLine: string, ...more: string[]): Promise<void> {
  const args = [...commandLine.trim().split(/\s+/), ...more];
  const { code, stderr } = await new Deno.Command(requireTool("openssl"), {
    args,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (code !== 0) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(stderr)}`);
  }
}
