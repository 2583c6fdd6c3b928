/**
 * `main.ts scrub` — re-reads every stored piece and checks it against its
 * recorded size and SHA-256, and against its cid when the cid is verifiable
 * (ops/scrub.ts). Pieces that fail are marked corrupt in the database, so
 * a running server answers 503 piece_corrupt for them instead of their bytes;
 * pieces that verify again are unmarked. Files no row names are reported as
 * orphans. Reading is paced by --scrub-rate, so it can run beside a serving
 * process (it takes no lock; each mark is one SQLite write), or instead of one.
 *
 * Prints one JSON report on stdout. Exit status 0: every piece verified;
 * 1: corrupt or missing pieces (named in the report); 2 (one line
 * `error: …`): a bad command line, or a data directory it cannot read.
 */
import { systemClock } from "../../clock.ts";
import { ConfigError } from "../../config/mod.ts";
import { dataDirPaths } from "../../data_dir.ts";
import { openDatabase } from "../../db/sqlite/database.ts";
import { SqliteCatalogRecords } from "../../db/sqlite/catalog_records.ts";
import { HashWorkerPool } from "../../piece_cid/pool.ts";
import { DiskStore } from "../../storage/driver/disk/disk_store.ts";
import { StoreError } from "../../storage/driver/driver.ts";
import { scrubPieces } from "../../ops/scrub.ts";
import { parseCommandArgs } from "./command_args.ts";
import { pathExists } from "../../fs/files.ts";
import type { OperatorCommandOptions } from "./command_args.ts";

export const SCRUB_USAGE = "main.ts scrub [--scrub-rate SIZE] [--data-dir DIR] [--hash-workers N]";

const MIB = 1024 * 1024;

export async function runScrubCommand(options: OperatorCommandOptions): Promise<number> {
  const parsed = parseCommandArgs({ ...options, usage: SCRUB_USAGE, positionals: 0 });
  if (parsed.kind === "help") {
    options.print(`Usage: ${SCRUB_USAGE}`);
    return 0;
  }
  const { config } = parsed;
  if (config.dataDir === null) throw new ConfigError("scrub needs --data-dir");
  const paths = dataDirPaths(config.dataDir);
  for (const path of [paths.database, paths.pieces]) {
    if (!await pathExists(path)) throw new ConfigError(`No ${path}: check --data-dir`);
  }
  const db = openDatabase({ path: paths.database, busyTimeoutMs: config.dbBusyTimeoutMs });
  const hashPool = config.hashWorkers === 0
    ? null
    : new HashWorkerPool({ workers: config.hashWorkers ?? undefined });
  try {
    const report = await scrubPieces({
      store: new DiskStore({ root: paths.pieces }),
      records: new SqliteCatalogRecords(db),
      bytesPerSecond: config.scrubBytesPerSecond,
      hashPool,
      clock: systemClock,
    });
    const mibPerSecond = Math.round(report.bytes / MIB / Math.max(report.seconds, 0.001) * 10) / 10;
    options.print(JSON.stringify({ ...report, mibPerSecond }, null, 2));
    return report.corrupt.length + report.missing.length === 0 ? 0 : 1;
  } catch (error) {
    // The pieces directory went away or became unreadable under the scrub.
    if (error instanceof StoreError) throw new ConfigError(error.message);
    throw error;
  } finally {
    hashPool?.close();
    db.close();
  }
}
