/**
 * `main.ts handoff status [--json]` — where pieces stand with the storage
 * provider (pieces and bytes by state, the oldest queued, the failed ones
 * with what is known of why); `main.ts handoff retry --failed | --deal ID`
 * — sends failed pieces back to the queue: a running server's next hand-off
 * run takes them. Both read and write the records only (handoff/operator.ts),
 * beside running servers; they contact no provider.
 *
 * Exit status 0: done; 1: `retry` found nothing failed to send again;
 * 2 (one line `error: …`): a bad command line, or records it cannot read.
 */
import { ConfigError } from "../config/mod.ts";
import { systemClock } from "../kernel/clock.ts";
import { handoffStatus, retryHandoffs, statusText } from "../handoff/operator.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

export const HANDOFF_USAGE =
  "main.ts handoff status [--json] | handoff retry (--failed | --deal ID) " +
  "[--data-dir DIR] [--database URL]";

export function runHandoffCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: {
      usage: HANDOFF_USAGE,
      positionals: 1,
      flags: { json: { type: "boolean" }, failed: { type: "boolean" }, deal: { type: "string" } },
    },
    async run({ config, positionals: [action], flags }, open) {
      if (action !== "status" && action !== "retry") {
        throw new ConfigError(`unknown action "${action}": status or retry`);
      }
      if (action === "retry" && (flags.failed === true) === (typeof flags.deal === "string")) {
        throw new ConfigError("handoff retry takes --failed or --deal ID (one of them)");
      }
      const { metadata } = await open(config, {
        needs: { metadata: "records", store: false, hmacKey: false },
        dataDir: "existing",
      });
      const records = metadata.handoffs;
      if (action === "status") {
        const report = await handoffStatus(records);
        return { report: flags.json === true ? report : statusText(report) };
      }
      let which: string[] | "failed" = "failed";
      if (typeof flags.deal === "string") {
        const deal = await metadata.catalog.getDeal(flags.deal);
        if (deal === null) throw new ConfigError(`no deal ${flags.deal}`);
        which = [deal.cid];
      }
      const requeued = await retryHandoffs(records, which, systemClock.now());
      return { report: { requeued }, status: requeued > 0 ? 0 : 1 };
    },
  });
}
