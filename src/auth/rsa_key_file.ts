/**
 * The RSA keys of `--token-alg RS256` on a single box: <data-dir>/rsa-keys.json,
 * `{"keys": [...]}` with the signing key first, mode 0600, written atomically
 * (a crash leaves the old keys or the new, never a torn file). The same text
 * is what `backup` writes into its copy, whatever place the live keys are in.
 */
import { writeFileAtomic } from "../kernel/fs/atomic_write.ts";
import type { RsaKeyStore, StoredRsaKey } from "../domain/signing_keys.ts";
import { KeyFileError } from "./hmac_key.ts";

/** The file's text for `keys`. */
export function rsaKeyFileText(keys: readonly StoredRsaKey[]): string {
  return JSON.stringify({ keys }, null, 2) + "\n";
}

function parseKeyFileText(text: string, path: string): StoredRsaKey[] {
  let file: { keys?: unknown };
  try {
    file = JSON.parse(text);
  } catch {
    throw new KeyFileError(`Cannot use RSA key file ${path}: it is not JSON`);
  }
  return Array.isArray(file?.keys) ? file.keys : [];
}

/** The key ring's file at `path` (the data directory's rsa-keys.json). */
export function rsaKeyFile(path: string): RsaKeyStore {
  const write = (keys: readonly StoredRsaKey[], ifExists: "replace" | "fail") =>
    writeFileAtomic(path, new TextEncoder().encode(rsaKeyFileText(keys)), {
      mode: 0o600,
      ifExists,
    });
  const read = async (): Promise<StoredRsaKey[] | null> => {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw new KeyFileError(`Cannot read RSA key file ${path}: ${(error as Error).message}`);
    }
    return parseKeyFileText(text, path);
  };
  return {
    where: path,
    shared: false,
    read,
    async adopt(keys) {
      try {
        await write(keys, "fail");
        return { adopted: true, keys };
      } catch (error) {
        // Another process made it first: whatever is there now is in force.
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      }
      return { adopted: false, keys: (await read()) ?? [] };
    },
    async update(change) {
      await write(change((await read()) ?? []), "replace");
    },
  };
}
