/**
 * The CLI against a server on HTTPS whose certificate this machine does not
 * trust: one line saying so (not "the server may not be running"), and with
 * the certificate named in DENO_CERT, as that line says, the command works.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { makePair, pairFiles } from "../helpers/tls_pair.ts";
import { assertFailure, cli } from "../helpers/cli.ts";

Deno.test("cli: an untrusted TLS certificate is named as such, and DENO_CERT lets it through", async () => {
  const pair = await makePair(0x36);
  await using files = await pairFiles(pair);
  await using server = await startTestServer({ args: files.args });
  assertMatch(server.url, /^https:/);
  const env = { STORAGE_URL: server.url };

  const refused = await cli(["limits"], { env });
  assertFailure(refused, 4, /^error: tls: .*certificate is not trusted here: .*DENO_CERT/);
  assertEquals(refused.stderr.includes("may not be running"), false, refused.stderr);

  const trusted = await cli(["limits"], { env: { ...env, DENO_CERT: files.certFile } });
  assertEquals(trusted.code, 0, trusted.stderr);
  assertMatch(trusted.stdout, /^tier: sponsored$/m);
});
