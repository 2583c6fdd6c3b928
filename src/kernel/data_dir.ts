/**
 * What lives in the data directory (--data-dir). One directory holds all of
 * a server's state, so backing it up or moving it is one copy.
 *
 *   <data-dir>/
 *   ├── storage.db        SQLite: tokens, pieces, deals, usage (plus -wal / -shm while open)
 *   ├── hmac.key          the token signing key, hex, mode 0600 (unless --hmac-key-file)
 *   ├── rsa-keys.json     with --token-alg RS256: the RSA signing key and earlier public keys, 0600
 *   └── pieces/           the disk driver's root (see driver/disk/layout.ts)
 */
import { joinPath } from "./fs/files.ts";
import type { Logger } from "./log.ts";

export const DATABASE_FILE = "storage.db";
export const KEY_FILE = "hmac.key";
export const RSA_KEYS_FILE = "rsa-keys.json";
export const PIECES_DIR = "pieces";

export interface DataDirPaths {
  database: string;
  pieces: string;
  /** Where the key file is by default (the operator may name another). */
  keyFile: string;
  /** The RSA key ring of --token-alg RS256. */
  rsaKeysFile: string;
}

export function dataDirPaths(dataDir: string): DataDirPaths {
  return {
    database: joinPath(dataDir, DATABASE_FILE),
    pieces: joinPath(dataDir, PIECES_DIR),
    keyFile: joinPath(dataDir, KEY_FILE),
    rsaKeysFile: joinPath(dataDir, RSA_KEYS_FILE),
  };
}

/**
 * Creates the directory 0700, or tightens an existing one that others can read.
 * With `groupMayEnter` (nginx's workers, in the directory's group, read the
 * pieces: --x-accel-redirect) it is 0710: the group may pass through to
 * pieces/ but neither list the directory nor read anything else in it.
 */
export async function makePrivateDirectory(
  path: string,
  logger: Logger,
  options: { groupMayEnter?: boolean } = {},
): Promise<void> {
  const groupBits = options.groupMayEnter ? 0o010 : 0;
  await Deno.mkdir(path, { recursive: true, mode: 0o700 });
  const { mode } = await Deno.stat(path);
  if (mode === null) return;
  const tightened = (mode & 0o077 & ~groupBits) !== 0;
  if (tightened || (mode & groupBits) !== groupBits) {
    const wanted = (mode & 0o700) | groupBits;
    await Deno.chmod(path, wanted);
    if (tightened) {
      logger.info(`data directory made private (${wanted.toString(8).padStart(4, "0")})`, {
        was: (mode & 0o777).toString(8),
      });
    }
  }
}

/**
 * The database file 0600 before SQLite opens it: SQLite gives the -wal and
 * -shm files it creates the database file's mode, so they follow.
 */
export async function makePrivateDatabaseFiles(databasePath: string): Promise<void> {
  try {
    const file = await Deno.open(databasePath, { createNew: true, write: true, mode: 0o600 });
    file.close();
    return;
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
  for (const path of [databasePath, `${databasePath}-wal`, `${databasePath}-shm`]) {
    await Deno.chmod(path, 0o600).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}
