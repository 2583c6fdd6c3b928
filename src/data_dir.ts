/**
 * What lives in the data directory (--data-dir). One directory holds all of
 * a server's state, so backing it up or moving it is one copy.
 *
 *   <data-dir>/
 *   ├── storage.db        SQLite: tokens, pieces, deals, usage (plus -wal / -shm while open)
 *   ├── hmac.key          the token signing key, hex, mode 0600 (unless --hmac-key-file)
 *   └── pieces/           the disk driver's root (see storage/driver/disk/layout.ts)
 */
import { joinPath } from "./fs/files.ts";

export const DATABASE_FILE = "storage.db";
export const KEY_FILE = "hmac.key";
export const PIECES_DIR = "pieces";

export interface DataDirPaths {
  database: string;
  pieces: string;
  /** Where the key file is by default (the operator may name another). */
  keyFile: string;
}

export function dataDirPaths(dataDir: string): DataDirPaths {
  return {
    database: joinPath(dataDir, DATABASE_FILE),
    pieces: joinPath(dataDir, PIECES_DIR),
    keyFile: joinPath(dataDir, KEY_FILE),
  };
}
