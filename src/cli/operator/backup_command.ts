/**
 * `main.ts backup DEST` — a consistent copy of the data directory while the
 * server runs (ops/backup.ts says why it is consistent). DEST must not
 * exist or be empty; it becomes a data directory `main.ts --data-dir DEST`
 * serves as it is: 0700, the database and key file 0600, the key copied so
 * that tokens keep working. It takes no lock and writes nothing in the live
 * directory, so it runs beside a serving process, or instead of one.
 *
 * Prints one JSON summary on stdout. Exit status 0: a complete copy; 1: a
 * copy that lacks pieces the live directory lacks too (named in the
 * summary); 2 (one line `error: …`): a bad command line or a destination
 * that is not new, and then nothing is left behind.
 */
import { keyFilePath } from "../../auth/hmac_key.ts";
import { ConfigError } from "../../config/mod.ts";
import { dataDirPaths, makePrivateDirectory } from "../../data_dir.ts";
import { joinPath, removeQuietly } from "../../fs/files.ts";
import { silentLogger } from "../../log.ts";
import { backupDataDir } from "../../ops/backup.ts";
import { DiskStore } from "../../storage/driver/disk/disk_store.ts";
import { parseCommandArgs } from "./command_args.ts";
import { pathExists } from "../../fs/files.ts";
import type { OperatorCommandOptions } from "./command_args.ts";

export const BACKUP_USAGE = "main.ts backup DEST [--data-dir DIR] [--hmac-key-file FILE]";

export async function runBackupCommand(options: OperatorCommandOptions): Promise<number> {
  const parsed = parseCommandArgs({ ...options, usage: BACKUP_USAGE, positionals: 1 });
  if (parsed.kind === "help") {
    options.print(`Usage: ${BACKUP_USAGE}`);
    return 0;
  }
  const { config, positionals: [destination] } = parsed;
  if (config.dataDir === null) throw new ConfigError("backup needs --data-dir");
  const source = dataDirPaths(config.dataDir);
  if (!await pathExists(source.database)) {
    throw new ConfigError(`No database at ${source.database}: check --data-dir`);
  }
  const created = await prepareDestination(destination);
  try {
    const summary = await backupDataDir({
      databasePath: source.database,
      source: new DiskStore({ root: source.pieces }),
      keyFile: keyFilePath({ dataDir: config.dataDir, keyFile: config.hmacKeyFile }),
      destination,
    });
    options.print(JSON.stringify(summary, null, 2));
    return summary.missing.length + summary.failed.length === 0 ? 0 : 1;
  } catch (error) {
    await removeBackup(destination, created);
    throw error;
  }
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
  }
  await makePrivateDirectory(destination, silentLogger);
  return !existed;
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
