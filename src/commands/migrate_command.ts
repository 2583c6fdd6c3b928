/**
 * `main.ts migrate --from-data-dir DIR [target flags]` — moves a single-box
 * data directory into the scale-out backends (ops/migrate.ts does the
 * work and says what is copied, in which order, and why a rerun is safe).
 *
 * The target is given with the server's own flags, so the environment that
 * configures the new instances configures the migration:
 *
 * - `--database URL`: the rows move into PostgreSQL, and the source's HMAC
 *   key (DIR/hmac.key, or --hmac-key-file) and RSA keys (DIR/rsa-keys.json,
 *   when it ran --token-alg RS256) into the database if it has none;
 * - `--store s3 --s3-…`: the pieces move into the bucket;
 * - `--store disk --data-dir NEWDIR` (with --database): the pieces move into
 *   NEWDIR/pieces; without --data-dir (flag or STORAGE_DATA_DIR), or with
 *   DIR itself, they stay where they are and only the rows move.
 *
 * At least one of --database and --store s3 is needed: without --database
 * the rows stay in DIR/storage.db, where a disk store next to them is the
 * source itself (copying a data directory to another disk is `main.ts
 * backup`).
 *
 * The source may be read while its server serves it (SQLite's WAL lets a
 * reader beside the writer), but what the server accepts after a run is not
 * in that run: stop the server (or put it read-only) before the final run.
 * Earlier runs can go while it serves; each later one copies only what is
 * new. While it runs, the command holds DIR's serve lock when it is free, so
 * the old server is not started under it by mistake.
 *
 * DIR is only read (--allow-read=DIR is all it needs there): its database is
 * opened read-only, and the lock is taken on the existing lock file opened
 * read-only. So a database of an older build is not brought to this build's
 * schema under a server that may still run the old build: it is refused,
 * naming the fix (upgrade the server on DIR first, which migrates it).
 *
 * Prints one JSON summary on stdout. Exit status 0: everything moved; 1: some
 * pieces could not be (named, with why; run again once fixed); 2 (one line
 * `error: …`): a bad command line, a missing source, an unreachable target —
 * found before anything is written — or a target that failed midway (what
 * was done stays done; run again).
 */
import { resolve } from "node:path";
import { keyFilePath, keyFilePlace } from "../auth/hmac_key.ts";
import { rsaKeyFile } from "../auth/rsa_key_file.ts";
import type { StoredRsaKey } from "../domain/signing_keys.ts";
import { ConfigError } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import { dataDirPaths } from "../kernel/data_dir.ts";
import { isPostgresUnavailable } from "../db/postgres/connection.ts";
import type { PostgresDatabase } from "../db/postgres/postgres_database.ts";
import { DatabaseTooNewError, schemaVersions } from "../db/sqlite/database.ts";
import type { Database } from "../db/sqlite/database.ts";
import { SqliteRowSource } from "../db/sqlite/row_copy.ts";
import { pathExists } from "../kernel/fs/files.ts";
import { StoreError } from "../driver/driver.ts";
import { DEFAULT_MIGRATE_CONCURRENCY, migrateDataDir } from "../ops/migrate.ts";
import type { MigrationSummary } from "../ops/migrate.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";
import type { OpenForCommand } from "./run_command.ts";

export const MIGRATE_USAGE = "main.ts migrate --from-data-dir DIR [--database URL] " +
  "[--store s3 --s3-endpoint URL --s3-bucket NAME | --data-dir NEWDIR] " +
  "[--hmac-key-file FILE] [--concurrency N]";

const MIGRATE_HELP = [
  "Copies DIR's rows into --database and its pieces into --store s3 (or --data-dir NEWDIR);",
  "at least one of --database and --store s3. A rerun copies only what is new: run it while",
  "the old server serves, then once more after stopping it. Prints one JSON summary;",
  "exit 0 all moved, 1 some pieces failed (named), 2 bad input.",
].join("\n");

const MAX_CONCURRENCY = 64;

/** Where the pieces go: a bucket, another directory, or nowhere (they stay in the source). */
type PieceTarget =
  | { kind: "s3" }
  | { kind: "disk"; dataDir: string }
  | { kind: "in place" };

interface MigrationPlan {
  fromDataDir: string;
  databaseUrl: string | null;
  pieces: PieceTarget;
  /** The source's key (hex) when the rows move; null when they stay or it has none. */
  sourceKeyHex: string | null;
  /** The source's RSA keys (--token-alg RS256) when the rows move; null when none. */
  sourceRsaKeys: StoredRsaKey[] | null;
  concurrency: number;
}

export function runMigrateCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: {
      usage: MIGRATE_USAGE,
      help: `Usage: ${MIGRATE_USAGE}\n\n${MIGRATE_HELP}`,
      positionals: 0,
      flags: { "from-data-dir": { type: "string" }, concurrency: { type: "string" } },
    },
    async run({ config, flags }, open) {
      const plan = await planMigration(config, flags, options.env);
      const summary = await runPlan(plan, config, open);
      return { report: summary, status: summary.pieces.failed.length === 0 ? 0 : 1 };
    },
  });
}

/** Every check that needs nothing opened or written: a refusal here leaves no trace. */
async function planMigration(
  config: Config,
  flags: Record<string, string | boolean | undefined>,
  env: OperatorCommandOptions["env"],
): Promise<MigrationPlan> {
  const fromDataDir = flags["from-data-dir"];
  if (typeof fromDataDir !== "string" || fromDataDir === "") {
    throw new ConfigError(`migrate needs --from-data-dir DIR; usage: ${MIGRATE_USAGE}`);
  }
  const source = dataDirPaths(fromDataDir);
  for (const path of [source.database, source.pieces]) {
    if (!await pathExists(path)) {
      throw new ConfigError(`No ${path}: --from-data-dir must be a server's data directory`);
    }
  }
  const pieces = await pieceTargetOf(config, flags, env, fromDataDir);
  if (config.databaseUrl === null && pieces.kind !== "s3") {
    throw new ConfigError(
      pieces.kind === "disk"
        ? "without --database the rows stay in the source directory, so the pieces can only " +
          "move to --store s3 (a copy of a data directory onto another disk is main.ts backup)"
        : "nothing to migrate: give --database URL (the rows to PostgreSQL) and/or --store s3 " +
          "(the pieces to a bucket)",
    );
  }
  return {
    fromDataDir,
    databaseUrl: config.databaseUrl,
    pieces,
    sourceKeyHex: config.databaseUrl === null
      ? null
      // Checked as a server would check it; null when there is no file.
      : await keyFilePlace(keyFilePath({ dataDir: fromDataDir, keyFile: config.hmacKeyFile })!, {
        createIfMissing: false,
      }).read(),
    sourceRsaKeys: config.databaseUrl === null
      ? null
      : await rsaKeyFile(dataDirPaths(fromDataDir).rsaKeysFile).read(),
    concurrency: parseConcurrency(flags.concurrency),
  };
}

/** --data-dir names the disk target only when given (flag or environment), not by default. */
async function pieceTargetOf(
  config: Config,
  flags: Record<string, string | boolean | undefined>,
  env: OperatorCommandOptions["env"],
  fromDataDir: string,
): Promise<PieceTarget> {
  if (config.store === "s3") return { kind: "s3" };
  const given = flags["data-dir"] !== undefined || env.STORAGE_DATA_DIR !== undefined;
  if (!given || config.dataDir === null) return { kind: "in place" };
  if (await samePath(config.dataDir, fromDataDir)) return { kind: "in place" };
  return { kind: "disk", dataDir: config.dataDir };
}

async function samePath(a: string, b: string): Promise<boolean> {
  const canonical = (path: string) => Deno.realPath(path).catch(() => resolve(path));
  return await canonical(a) === await canonical(b);
}

function parseConcurrency(value: string | boolean | undefined): number {
  if (value === undefined) return DEFAULT_MIGRATE_CONCURRENCY;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= MAX_CONCURRENCY)) {
    throw new ConfigError(`--concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}`);
  }
  return n;
}

/** What the command prints: the migration's summary, and what it moved from and to. */
interface MigrateReport extends MigrationSummary {
  source: string;
  targets: { database: string; store: string };
}

/**
 * Opens the targets, then the source, as a server would open each
 * (backends/open.ts): the database first, so one that cannot be reached means
 * nothing written; the source's serve lock held when it is free.
 */
async function runPlan(
  plan: MigrationPlan,
  config: Config,
  open: OpenForCommand,
): Promise<MigrateReport> {
  const target = await open(config, {
    needs: {
      metadata: plan.databaseUrl === null ? false : "database",
      store: plan.pieces.kind !== "in place",
      hmacKey: false,
    },
    // Made as a server makes its data directory: private, since rows name who stored what.
    dataDir: "create",
  });
  try {
    const source = await open(
      { ...config, dataDir: plan.fromDataDir, databaseUrl: null, store: "disk", s3: null },
      {
        needs: { metadata: "database", store: true, hmacKey: false },
        dataDir: "read-only",
        lock: "try",
      },
    );
    requireCurrentSchema(source.sqlite!, plan.fromDataDir);
    const warnings = source.lockHeldElsewhere === null ? [] : [
      `${source.lockHeldElsewhere}: what that server accepts after this run is not copied; ` +
      "stop it before the final run",
    ];
    const targetStore = target.store ?? source.store!;
    if (plan.pieces.kind !== "in place") {
      // A bucket that cannot be reached is found before the first row is written.
      const health = await targetStore.check();
      if (!health.ok) throw new ConfigError(`The target store is not usable: ${health.detail}`);
    }
    const summary = await migrateDataDir({
      source: new SqliteRowSource(source.sqlite!),
      sourceStore: source.store!,
      targetStore,
      targetDatabase: target.postgres,
      sourceKeyHex: plan.sourceKeyHex,
      sourceRsaKeys: plan.sourceRsaKeys,
      concurrency: plan.concurrency,
    });
    return {
      source: plan.fromDataDir,
      targets: {
        database: target.postgres?.where ?? "unchanged (the source's SQLite)",
        store: describeTarget(plan.pieces, config),
      },
      ...summary,
      warnings: [...warnings, ...summary.warnings],
    };
  } catch (error) {
    throw asOperatorError(error, target.postgres);
  }
}

/** The source's rows are read as this build's schema has them: an older one is refused. */
function requireCurrentSchema(db: Database, fromDataDir: string): void {
  const { current, latest } = schemaVersions(db);
  if (current > latest) throw new DatabaseTooNewError(current, latest);
  if (current < latest) {
    throw new ConfigError(
      `${fromDataDir}'s database is from an older build (schema ${current}; this build's is ` +
        `${latest}): start this build's server on ${fromDataDir} once (it brings the database ` +
        "up to date), then run the migration again",
    );
  }
}

function describeTarget(target: PieceTarget, config: Config): string {
  if (target.kind === "in place") return "unchanged (the pieces stay in the source directory)";
  if (target.kind === "disk") return `disk at ${dataDirPaths(target.dataDir).pieces}`;
  return `s3 bucket ${config.s3!.bucket} at ${config.s3!.endpoint}`;
}

/** Failures of a target midway, as the one line main.ts prints (exit 2); others unchanged. */
function asOperatorError(error: unknown, postgres: PostgresDatabase | null): unknown {
  const again = "what was copied stays; run the migration again";
  if (error instanceof StoreError) return new ConfigError(`${error.message}; ${again}`);
  if (postgres !== null && isPostgresUnavailable(error)) {
    return new ConfigError(
      `PostgreSQL at ${postgres.where} failed: ${(error as Error).message}; ${again}`,
    );
  }
  return error;
}
