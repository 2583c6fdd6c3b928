/**
 * `main.ts scrub` — re-reads every stored piece and checks it against its
 * recorded size and SHA-256, and against its cid when the cid is verifiable
 * (ops/scrub.ts). Pieces that fail are marked corrupt in the database, so
 * a running server answers 503 piece_corrupt for them instead of their bytes;
 * pieces that verify again are unmarked. Stored pieces no row names are
 * reported as orphans. It opens the deployment as the server does
 * (backends/open.ts): a data directory (SQLite and pieces on disk), or
 * PostgreSQL and a bucket, or a mix. Reading is paced by --scrub-rate, so it
 * can run beside serving processes (it takes no lock; each mark is one
 * short transaction), or instead of them.
 *
 * Prints one JSON report on stdout. Exit status 0: every piece verified;
 * 1: corrupt or missing pieces (named in the report); 2 (one line
 * `error: …`): a bad command line, or a deployment it cannot read.
 */
import { systemClock } from "../kernel/clock.ts";
import { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { scrubPieces } from "../ops/scrub.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

export const SCRUB_USAGE =
  "main.ts scrub [--scrub-rate SIZE] [--data-dir DIR] [--hash-workers N] " +
  "[--database URL] [--store s3 --s3-endpoint URL --s3-bucket NAME]";

const MIB = 1024 * 1024;

export function runScrubCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: { usage: SCRUB_USAGE, positionals: 0 },
    async run({ config }, open) {
      const { store, metadata } = await open(config, {
        needs: { metadata: "records", store: true, hmacKey: false },
        dataDir: "existing",
      });
      const hashPool = config.hashWorkers === 0
        ? null
        : new HashWorkerPool({ workers: config.hashWorkers ?? undefined });
      try {
        // A store that goes away or becomes unreadable under the scrub is one line.
        const report = await scrubPieces({
          store,
          records: metadata.catalog,
          bytesPerSecond: config.scrubBytesPerSecond,
          hashPool,
          clock: systemClock,
        });
        const seconds = Math.max(report.seconds, 0.001);
        const mibPerSecond = Math.round(report.bytes / MIB / seconds * 10) / 10;
        return {
          report: { ...report, mibPerSecond },
          status: report.corrupt.length + report.missing.length === 0 ? 0 : 1,
        };
      } finally {
        hashPool?.close();
      }
    },
  });
}
