/**
 * The server's HMAC key for HS256 tokens. It lives in a file as hex (at
 * least 64 hex digits = 32 bytes): by default <data-dir>/hmac.key, created
 * with 32 random bytes and mode 0600 on first start; or a file the operator
 * names. `rotate-key` writes a new key atomically; a running server re-reads
 * the file every few seconds, so a rotation takes effect without a restart
 * and every older token becomes invalid.
 *
 * Instances that share a PostgreSQL database share the key there instead
 * (unless the operator names a file every instance reads): `HmacKey.fromSource`
 * reads it through the same reload path, so a `rotate-key` against the
 * database reaches every instance within one reload interval, and a token
 * signed with the new key is accepted at once (a failed signature re-reads).
 */
import { writeFileAtomic } from "../kernel/fs/atomic_write.ts";
import { dataDirPaths } from "../kernel/data_dir.ts";
import { ReloadingKey } from "./key_reload.ts";

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

/** 32 random bytes as hex: a new key's text. */
export function newKeyHex(): string {
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
    await writeKeyFile(path, newKeyHex(), "replace");
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

/** Where a shared key is kept (db/postgres/hmac_keys.ts): its hex text, created on first read. */
export interface KeySource {
  /** Names the place in messages, e.g. "the database". */
  readonly label: string;
  /** The key's hex text; a source that has none yet creates one from `create()`. */
  read(create: () => string): Promise<string>;
}

/** A shared source the operator's commands also read as it is, and replace. */
export interface SharedKeySource extends KeySource {
  /** The key's hex text, or null while there is none (nothing is created). */
  current(): Promise<string | null>;
  rotate(keyHex: string): Promise<void>;
}

/**
 * Where the signing key is kept, as the operator's commands meet it: the
 * server opens it, `token mint` signs with it, `backup` and `migrate` copy
 * its text, `rotate-key` replaces it. A file, or a shared source.
 */
export interface HmacKeyPlace {
  /** The file's path, or the source's label ("the database"), for messages. */
  readonly where: string;
  /** Whether every instance reads this one place (a rotation reaches them all). */
  readonly shared: boolean;
  /** The key in force, made first where the place makes one (see keyFilePlace). */
  open(): Promise<HmacKey>;
  /** The key's hex text (checked) as it is; null when there is none. Nothing is made. */
  read(): Promise<string | null>;
  /** Replaces the key with 32 new random bytes: every token signed before stops working. */
  rotate(): Promise<void>;
}

/** A key file; `createIfMissing`: open() makes it (the data directory's default key). */
export function keyFilePlace(path: string, options: { createIfMissing: boolean }): HmacKeyPlace {
  return {
    where: path,
    shared: false,
    open: () => HmacKey.open({ path, createIfMissing: options.createIfMissing }),
    async read() {
      let text: string;
      try {
        text = await Deno.readTextFile(path);
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return null;
        throw new KeyFileError(`Cannot read HMAC key file ${path}: ${(error as Error).message}`);
      }
      parseKeyHex(text, path);
      return text.trim();
    },
    rotate: () => rotateKeyFile(path),
  };
}

/** A key every instance shares (the PostgreSQL database); open() makes one if there is none. */
export function sharedKeyPlace(source: SharedKeySource): HmacKeyPlace {
  return {
    where: source.label,
    shared: true,
    open: () => HmacKey.fromSource(source),
    async read() {
      const text = await source.current();
      if (text !== null) parseKeyHex(text, source.label);
      return text?.trim() ?? null;
    },
    rotate: () => source.rotate(newKeyHex()),
  };
}

/** The one HMAC key tokens are signed with, re-read from its file when it changes. */
export class HmacKey extends ReloadingKey {
  #key: CryptoKey;
  readonly #label: string;

  private constructor(
    source: { read: (() => Promise<string>) | null; label: string },
    key: CryptoKey,
    text: string,
  ) {
    super(text, source.read);
    this.#label = source.label;
    this.#key = key;
  }

  /** A key kept in a shared source (the PostgreSQL database) rather than a file. */
  static async fromSource(source: KeySource): Promise<HmacKey> {
    const read = () => source.read(newKeyHex);
    const text = await read();
    return new HmacKey(
      { read, label: source.label },
      await importHmacKey(parseKeyHex(text, source.label)),
      text,
    );
  }

  static async open(options: HmacKeyOptions): Promise<HmacKey> {
    if (options.path === null) {
      const text = newKeyHex();
      return new HmacKey(
        { read: null, label: "(memory)" },
        await importHmacKey(parseKeyHex(text, "(memory)")),
        text,
      );
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
        await writeKeyFile(options.path, newKeyHex(), "fail");
      } catch (createError) {
        // Another process may have created it first; read whatever is there now.
        if (!(createError instanceof Deno.errors.AlreadyExists)) throw createError;
      }
      text = await Deno.readTextFile(options.path);
    }
    const path = options.path;
    return new HmacKey(
      { read: () => Deno.readTextFile(path), label: path },
      await importHmacKey(parseKeyHex(text, path)),
      text,
    );
  }

  get key(): CryptoKey {
    return this.#key;
  }

  protected override async adopt(text: string): Promise<void> {
    this.#key = await importHmacKey(parseKeyHex(text, this.#label));
  }
}
