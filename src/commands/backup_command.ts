/**
 * `main.ts backup DEST` — a consistent copy of the deployment while its
 * servers run (ops/backup.ts says why it is consistent), always written as a
 * standalone data directory that `main.ts --data-dir DEST` serves as it is:
 * 0700, the database and key files 0600, the keys (the HMAC key, and the RSA
 * keys of --token-alg RS256 wherever they are kept) copied so that tokens
 * keep working. The live side is opened as the server opens it
 * (backends/open.ts), only to read: a data directory, or PostgreSQL and a
 * bucket, or a mix. DEST must not exist or be empty. It takes no lock and
 * writes nothing live, so it runs beside serving processes, or instead of
 * them.
 *
 * Prints one JSON summary on stdout. Exit status 0: a complete copy; 1: a
 * copy that lacks pieces the live store lacks too, or whose bytes fail their
 * check (named in the summary); 2 (one line `error: …`): a bad command line,
 * a deployment it cannot read, or a destination that is not new, and then
 * nothing is left behind.
 */
import { rsaKeyFileText } from "../auth/rsa_key_file.ts";
import { ConfigError } from "../config/mod.ts";
import type { OpenedBackends } from "../backends/open.ts";
import { makePrivateDirectory } from "../kernel/data_dir.ts";
import { joinPath, removeQuietly } from "../kernel/fs/files.ts";
import { silentLogger } from "../kernel/log.ts";
import { backupDeployment } from "../ops/backup.ts";
import type { LiveMetadata } from "../ops/backup.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

export const BACKUP_USAGE = "main.ts backup DEST [--data-dir DIR] [--hmac-key-file FILE] " +
  "[--database URL] [--store s3 --s3-endpoint URL --s3-bucket NAME]";

export function runBackupCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: { usage: BACKUP_USAGE, positionals: 1 },
    async run({ config, positionals: [destination] }, open) {
      const backends = await open(config, {
        needs: { metadata: "database", store: true, hmacKey: false },
        dataDir: "read-only",
      });
      const keyHex = await backends.keyPlace?.read() ?? null;
      const rsaKeys = await backends.rsaKeyStore?.read() ?? null;
      const created = await prepareDestination(destination);
      try {
        const summary = await backupDeployment({
          metadata: liveMetadataOf(backends),
          store: backends.store,
          keyHex,
          // RS256's keys (the data directory's, or the database's), as the copy's rsa-keys.json.
          rsaKeysText: rsaKeys === null ? null : rsaKeyFileText(rsaKeys),
          destination,
        });
        return {
          report: summary,
          status: summary.missing.length + summary.failed.length === 0 ? 0 : 1,
        };
      } catch (error) {
        // Whatever failed the copy (a live store gone away is one line, as for a bad start),
        // nothing of it is left behind.
        await removeBackup(destination, created);
        throw error;
      }
    },
  });
}

function liveMetadataOf(backends: OpenedBackends): LiveMetadata {
  if (backends.sqlite !== null) return { kind: "sqlite", db: backends.sqlite };
  return { kind: "rows", database: backends.postgres! };
}

/**
 * Makes DEST a new private directory; refuses one with anything in it (a
 * backup never mixes with other files). Returns whether DEST was created.
 */
async function prepareDestination(destination: string): Promise<boolean> {
  let existed = false;
  try {
    const info = await Deno.stat(destination);
    if (!info.isDirectory) throw new ConfigError(`${destination} exists and is not a directory`);
    for await (const _ of Deno.readDir(destination)) {
      throw new ConfigError(`${destination} is not empty: a backup goes into a new directory`);
    }
    existed = true;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await refuseDanglingLink(destination);
  }
  try {
    await makePrivateDirectory(destination, silentLogger);
  } catch (error) {
    // Permissions, a read-only file system, a missing parent: the operator's to fix, one line.
    throw new ConfigError(`cannot create ${destination}: ${messageOf(error)}`);
  }
  return !existed;
}

/**
 * stat follows a symbolic link, so a link to nothing looks free, and mkdir
 * then fails on the link itself: say what it is instead.
 */
async function refuseDanglingLink(destination: string): Promise<void> {
  const info = await Deno.lstat(destination).catch(() => null);
  if (info?.isSymlink) {
    const target = await Deno.readLink(destination).catch(() => "?");
    throw new ConfigError(
      `${destination} is a symbolic link to ${target}, which does not exist: ` +
        "create that directory, or give the backup a new path",
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Takes a failed backup away again: DEST itself if it made it, else what it put in DEST. */
async function removeBackup(destination: string, created: boolean): Promise<void> {
  if (created) {
    await Deno.remove(destination, { recursive: true }).catch(() => {});
    return;
  }
  for await (const entry of Deno.readDir(destination)) {
    const path = joinPath(destination, entry.name);
    if (entry.isDirectory) await Deno.remove(path, { recursive: true }).catch(() => {});
    else await removeQuietly(path);
  }
}
