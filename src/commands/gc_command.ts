/**
 * `main.ts gc [--as-of TIME] [--dry-run] [--json]` — one garbage-collection
 * sweep (ops/gc.ts): removes the bytes of every piece no deal has kept for
 * the grace period (--retention-grace-days), and the objects no metadata
 * names that were last written that long ago, and lists each with its cid
 * and size. `--dry-run` lists what it would remove and removes nothing;
 * `--as-of` judges as at another instant (what will go by then).
 *
 * It opens the deployment as the server does (backends/open.ts). A data
 * directory (SQLite, or pieces on disk) must be one no server holds: the
 * command takes its serve lock. On PostgreSQL and a bucket it runs while
 * instances serve: one sweep at a time across all of them (catalog/
 * sweep_turn.ts), so a sweep running elsewhere makes it stop at once.
 *
 * Prints the pieces, then a summary (or, with --json, one JSON document).
 * Exit status 0: the sweep ran; 2 (one line `error: …`): a bad command line,
 * a deployment it cannot open, a data directory a server holds, another
 * sweep running, or a store that failed midway (what was removed stays
 * removed, and the next sweep finishes what was begun).
 */
import { systemClock } from "../kernel/clock.ts";
import { ConfigError } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import { garbageCollectorOf } from "../ops/gc_service.ts";
import type { RemovedPiece, SweepReport } from "../ops/gc.ts";
import { silentLogger } from "../kernel/log.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

export const GC_USAGE = "main.ts gc [--as-of TIME] [--dry-run] [--json] " +
  "[--retention-grace-days DAYS] [--gc-rate COUNT] [--data-dir DIR] [--database URL] " +
  "[--store s3 --s3-endpoint URL --s3-bucket NAME]";

const GC_HELP = [
  "Removes the pieces no deal has kept for --retention-grace-days, and objects no metadata",
  "names written that long ago; lists each (cid, size). --dry-run removes nothing; --as-of",
  "judges as at another time (RFC 3339). A data directory must be one no server holds; on",
  "PostgreSQL and a bucket it runs beside the instances, one sweep at a time.",
].join("\n");

export function runGcCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: {
      usage: GC_USAGE,
      help: `Usage: ${GC_USAGE}\n${GC_HELP}`,
      positionals: 0,
      flags: {
        "as-of": { type: "string" },
        "dry-run": { type: "boolean" },
        json: { type: "boolean" },
      },
    },
    async run({ config, flags }, open) {
      const asOf = parseAsOf(flags["as-of"]);
      const dryRun = flags["dry-run"] === true;
      const { metadata, store } = await open(config, {
        needs: { metadata: "records", store: true, hmacKey: false },
        dataDir: "existing",
        // No server may serve a data directory this sweeps; shared backends need no lock.
        lock: usesDataDir(config) ? "hold" : "none",
      });
      const removed: RemovedPiece[] = [];
      const gc = garbageCollectorOf({
        metadata,
        store,
        settings: config,
        clock: systemClock,
        logger: silentLogger,
      });
      // A store that goes away under the sweep is one line; what it removed stays removed.
      const report = await gc.sweep({ asOf, dryRun, onRemoved: (piece) => removed.push(piece) });
      if (report === null) {
        throw new ConfigError("Another sweep is running (an instance or another gc): try later");
      }
      return { report: flags.json === true ? asJson(report, removed) : asText(report, removed) };
    },
  });
}

function usesDataDir(config: Config): boolean {
  return config.databaseUrl === null || config.store === "disk";
}

function parseAsOf(raw: string | boolean | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = typeof raw === "string" && /^\d{4}-\d\d-\d\dT/.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(ms)) {
    throw new ConfigError(`--as-of must be an RFC 3339 time, e.g. 2027-01-01T00:00:00Z`);
  }
  return ms;
}

function asJson(report: SweepReport, removed: readonly RemovedPiece[]): object {
  const pieces = removed.filter((r) => !r.orphan).map(({ cid, size }) => ({ cid, size }));
  const orphans = removed.filter((r) => r.orphan).map(({ cid, size }) => ({ cid, size }));
  return { ...report, pieces, orphans };
}

function asText(report: SweepReport, removed: readonly RemovedPiece[]): string {
  const verb = report.dryRun ? "would remove" : "removed";
  const lines = removed.map((r) => `${verb} ${r.orphan ? "orphan " : ""}${r.cid} ${r.size}`);
  lines.push(
    `${verb} ${report.removedPieces} pieces (${report.removedBytes} bytes) and ` +
      `${report.removedOrphans} orphans (${report.removedOrphanBytes} bytes); ` +
      `judged as of ${report.asOf}: deals that ended by ${report.endedBy} keep nothing`,
  );
  if (report.keptOnRecheck > 0) {
    lines.push(`${report.keptOnRecheck} pieces were wanted again before they could be removed`);
  }
  if (report.resumed > 0) lines.push(`finished ${report.resumed} removals an earlier sweep began`);
  if (report.youngOrphans > 0) {
    lines.push(`${report.youngOrphans} orphans are younger than the grace period: kept for now`);
  }
  return lines.join("\n");
}
