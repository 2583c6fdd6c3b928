/**
 * A server handing pieces off to the fake PDP provider (tests/helpers/fake_pdp/):
 * the payer's key in a 0600 file, the settings --handoff pdp needs, and a
 * port chosen before the start, since the provider pulls from --base-url,
 * which must then name the port the server will listen on.
 */
import { privateKeyToAccount } from "viem/accounts";
import { calibration } from "@filoz/synapse-core/chains";
import type { FakePdp, FakePdpOptions } from "./fake_pdp/mod.ts";
import { startTestServer, type TestServer, type TestServerOptions } from "./server.ts";
import { eventually } from "./wait.ts";

/** Chain and retry timings in milliseconds, so a round at the fake provider takes well under a second. */
export const FAST_PDP: Partial<FakePdpOptions> = {
  schedulerIntervalMs: 5,
  confirmAfterMs: 20,
  settleAfterMs: 20,
  provingPeriodMs: 20,
  retryDelaysMs: [20, 40],
};

/** The payer's key (a well-known test key: anvil's second account). */
export const PAYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
export const PAYER = privateKeyToAccount(PAYER_KEY);

/** A port free now (the server binds it a moment later; the kernel does not hand it out again soon). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

export interface HandoffServerOptions extends TestServerOptions {
  /** --handoff-wait SECONDS (default 0). */
  waitSeconds?: number;
  /** A port to reuse (a restart on the same data directory keeps its base URL). */
  port?: number;
}

/** The server's flags for --handoff pdp against `pdp`, with the key written to `dir`. */
export async function handoffArgs(
  pdp: FakePdp,
  dir: string,
  port: number,
  waitSeconds = 0,
): Promise<string[]> {
  const keyFile = `${dir}/pdp.key`;
  await Deno.writeTextFile(keyFile, `${PAYER_KEY}\n`, { mode: 0o600 });
  await Deno.chmod(keyFile, 0o600);
  return [
    "--port",
    String(port),
    "--base-url",
    `http://127.0.0.1:${port}`,
    "--handoff",
    "pdp",
    "--pdp-url",
    pdp.url,
    "--pdp-record-keeper",
    calibration.contracts.fwss.address,
    "--chain-id",
    String(calibration.id),
    "--pdp-key-file",
    keyFile,
    "--pdp-payee",
    pdp.options.payee,
    "--pdp-allow-http-source",
    "true",
    "--handoff-wait",
    String(waitSeconds),
  ];
}

/** A test server handing off to `pdp`; the hand-off job runs every 20 ms. */
export async function startHandoffServer(
  pdp: FakePdp,
  options: HandoffServerOptions = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "storage-handoff-" });
  const port = options.port ?? freePort();
  const args = await handoffArgs(pdp, dataDir, port, options.waitSeconds);
  const server = await startTestServer({
    ...options,
    dataDir,
    args: [...args, ...(options.args ?? [])],
    jobIntervals: { handoff: 20, ...options.jobIntervals },
  });
  return {
    ...server,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      if (options.dataDir === undefined) await Deno.remove(dataDir, { recursive: true });
    },
  };
}

/** The deal's hand-off (GET /api/deals/{id}) once `done` holds for it. */
export async function handoffOnceSettled(
  server: TestServer,
  token: string,
  dealId: string,
  done: (handoff: Record<string, unknown>) => boolean,
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> | null = null;
  await eventually(
    async () => {
      const response = await server.get(`/api/deals/${dealId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const deal = await response.json();
      last = deal.handoff ?? null;
      return last !== null && done(last);
    },
    `deal ${dealId}'s hand-off to settle (last: ${JSON.stringify(last)})`,
    { timeoutMs },
  );
  return last!;
}
