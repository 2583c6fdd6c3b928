/**
 * Byte sizes as people type them: "100MiB", "5GiB", or a bare byte count.
 * Shared by the server's configuration and the user's `storage` command
 * line, so it imports nothing: the user's CLI must not pull in the server.
 * Each caller says which error a bad size is (a ConfigError for the server,
 * a UsageError for the CLI), so the one line it prints names the flag.
 */

export const KIB = 1024;
export const MIB = 1024 * KIB;
export const GIB = 1024 * MIB;
export const TIB = 1024 * GIB;

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kib: KIB,
  mib: MIB,
  gib: GIB,
  tib: TIB,
};

/**
 * Parses "100MiB", "5GiB" or a bare byte count; a value that is not a
 * positive size is refused with `refuse(message)`, the message naming `name`.
 *
 *   parseSize("64KiB", "--piece-size", (m) => new UsageError(m)) // 65536
 */
export function parseSize(
  value: string,
  name: string,
  refuse: (message: string) => Error,
): number {
  const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(value);
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) {
    throw refuse(`${name} must be a size like 100MiB or 1048576, got "${value}"`);
  }
  const bytes = Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw refuse(`${name} must be a positive size, got "${value}"`);
  }
  return bytes;
}
