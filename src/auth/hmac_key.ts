/**
 * The server's HMAC key for HS256 tokens. It lives in a file as hex (at
 * least 64 hex digits = 32 bytes): by default <data-dir>/hmac.key, created
 * with 32 random bytes and mode 0600 on first start; or a file the operator
 * names. `rotate-key` writes a new key atomically; a running server re-reads
 * the file every few seconds, so a rotation takes effect without a restart
 * and every older token becomes invalid.
 */
import { writeFileAtomic } from "../fs/atomic_write.ts";
import { dataDirPaths } from "../data_dir.ts";

const MIN_KEY_HEX_DIGITS = 64;

export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyFileError";
  }
}

/** Parses a key file's text: hex digits only (whitespace around is ignored), 64 or more. */
export function parseKeyHex(text: string, path: string): Uint8Array<ArrayBuffer> {
  const hex = text.trim();
  if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length % 2 !== 0) {
    throw new KeyFileError(`Cannot use HMAC key file ${path}: it must hold hex digits only`);
  }
  if (hex.length < MIN_KEY_HEX_DIGITS) {
    throw new KeyFileError(
      `Cannot use HMAC key file ${path}: ${hex.length} hex digits, at least ${MIN_KEY_HEX_DIGITS} needed`,
    );
  }
  return Uint8Array.fromHex(hex);
}

function randomKeyHex(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toHex() + "\n";
}

async function importHmacKey(bytes: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return await crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

/** Where the key file is: the operator's file, or hmac.key in the data directory. */
export function keyFilePath(options: { dataDir: string | null; keyFile: string | null }) {
  if (options.keyFile) return options.keyFile;
  return options.dataDir ? dataDirPaths(options.dataDir).keyFile : null;
}

function writeKeyFile(path: string, text: string, ifExists: "replace" | "fail"): Promise<void> {
  return writeFileAtomic(path, new TextEncoder().encode(text), { mode: 0o600, ifExists });
}

/** Replaces the key with 32 new random bytes. Every token signed with the old key stops working. */
export async function rotateKeyFile(path: string): Promise<void> {
  try {
    await writeKeyFile(path, randomKeyHex(), "replace");
  } catch (error) {
    // The key's directory is missing: a typo in --data-dir, or a server never started there.
    if (error instanceof Deno.errors.NotFound) {
      throw new KeyFileError(
        `Cannot rotate the key in ${path}: its directory does not exist (check --data-dir)`,
      );
    }
    throw error;
  }
}

export interface HmacKeyOptions {
  /** The key file, or null for a key that lives only in memory (storage offline). */
  path: string | null;
  /** Create the file with a random key when it does not exist (the data-dir default). */
  createIfMissing: boolean;
}

/** The one HMAC key tokens are signed with, re-read from its file when it changes. */
export class HmacKey {
  #key: CryptoKey;
  #text: string;
  #version = 1;
  readonly #path: string | null;

  private constructor(path: string | null, key: CryptoKey, text: string) {
    this.#path = path;
    this.#key = key;
    this.#text = text;
  }

  static async open(options: HmacKeyOptions): Promise<HmacKey> {
    if (options.path === null) {
      const text = randomKeyHex();
      return new HmacKey(null, await importHmacKey(parseKeyHex(text, "(memory)")), text);
    }
    let text: string;
    try {
      text = await Deno.readTextFile(options.path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound) || !options.createIfMissing) {
        throw new KeyFileError(
          `Cannot read HMAC key file ${options.path}: ${(error as Error).message}`,
        );
      }
      try {
        await writeKeyFile(options.path, randomKeyHex(), "fail");
      } catch (createError) {
        // Another process may have created it first; read whatever is there now.
        if (!(createError instanceof Deno.errors.AlreadyExists)) throw createError;
      }
      text = await Deno.readTextFile(options.path);
    }
    return new HmacKey(
      options.path,
      await importHmacKey(parseKeyHex(text, options.path)),
      text,
    );
  }

  get key(): CryptoKey {
    return this.#key;
  }

  /** Increases on every rotation, so caches of verified tokens know to forget. */
  get version(): number {
    return this.#version;
  }

  /** Re-reads the key file; true if the key changed. A missing or bad file keeps the old key. */
  async reload(): Promise<boolean> {
    if (this.#path === null) return false;
    let text: string;
    try {
      text = await Deno.readTextFile(this.#path);
    } catch {
      return false;
    }
    if (text === this.#text) return false;
    const key = await importHmacKey(parseKeyHex(text, this.#path));
    this.#key = key;
    this.#text = text;
    this.#version++;
    return true;
  }

  /** Polls the key file every intervalMs; returns a function that stops polling. */
  watch(intervalMs: number, onError: (error: unknown) => void): () => void {
    if (this.#path === null) return () => {};
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.reload().catch(onError).finally(() => running = false);
    }, intervalMs);
    Deno.unrefTimer(timer);
    return () => clearInterval(timer);
  }
}
