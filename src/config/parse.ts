/**
 * Parsing of one setting's value: the text a user typed (a flag, a variable,
 * or a default as written in the option table) in, a typed value out, or a
 * ConfigError whose message names the flag or variable (`name`) and says what
 * was expected. Sizes take binary units (100MiB); durations are whole numbers
 * of the unit the flag names (seconds, hours, days).
 */
import { getAddress, isAddress } from "viem";
import { parseIpRanges } from "../net/ip.ts";
import type { IpRange } from "../net/ip.ts";
import { parsePostgresUrl as splitPostgresUrl } from "../kernel/postgres_url.ts";
import { parseSize as parseSizeOf } from "../kernel/units.ts";

/** A setting that cannot be used; the message names the flag or variable and says why. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Mebibytes: caps are whole MiB (load.ts checks it). */
export { MIB } from "../kernel/units.ts";

/** Parses "100MiB", "5GiB" or a bare byte count (kernel/units.ts); a bad one is a ConfigError. */
export function parseSize(value: string, name: string): number {
  return parseSizeOf(value, name, (message) => new ConfigError(message));
}

export function parseInteger(
  value: string,
  name: string,
  range: { min: number; max: number },
): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new ConfigError(
      `${name} must be a whole number from ${range.min} to ${range.max}, got "${value}"`,
    );
  }
  return n;
}

export function parseBoolean(value: string, name: string): boolean {
  const v = value.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

export function parseChoice<T extends string>(
  value: string,
  name: string,
  choices: readonly T[],
): T {
  if (!(choices as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${value}"`);
  }
  return value as T;
}

/** A URL whose scheme is one of `schemes`; the text is returned as given. */
function parseUrlOf(value: string, name: string, schemes: string[], example: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // Reported below, with the example.
  }
  if (url === null || !schemes.includes(url.protocol.slice(0, -1))) {
    throw new ConfigError(`${name} must be a URL like ${example}`);
  }
  return value;
}

export function parseSmtpUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["smtp", "smtps"], "smtp://user:pass@mail.example.org:587");
}

export function parseRpcUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["http", "https"], "http://127.0.0.1:8545");
}

export function parseHttpUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["http", "https"], "https://s3.example.org").replace(/\/+$/, "");
}

export function parsePostgresUrl(value: string, name: string): string {
  const example = "postgres://user:pass@host:5432/db (several hosts: host1:5432,host2:5432)";
  let parsed;
  try {
    parsed = splitPostgresUrl(value);
  } catch (error) {
    throw new ConfigError(`${name} must be a URL like ${example}: ${(error as Error).message}`);
  }
  // The client would otherwise ask the OS for a user name, which the server may not read.
  if (new URL(parsed.hostUrls[0]).username === "") {
    throw new ConfigError(`${name} must name a user: ${example}`);
  }
  return value;
}

/** S3 bucket naming rules (3–63 lowercase letters, digits, dots, hyphens). */
export function parseBucketName(value: string, name: string): string {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(value)) {
    throw new ConfigError(`${name} must be a bucket name: 3-63 lowercase letters, digits, . or -`);
  }
  return value;
}

/** A header value: a short token, so it cannot break the response. */
export function parseSourceLabel(value: string, name: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,31}$/i.test(value)) {
    throw new ConfigError(`${name} must be 1-32 letters, digits, _ or -`);
  }
  return value;
}

/**
 * The X-Accel-Redirect prefix: an nginx location's path, "/" at both ends
 * (the piece's path under the data directory follows it), in characters a
 * URI path keeps as they are.
 */
export function parseAccelPrefix(value: string, name: string): string {
  const segments = value.slice(1, -1).split("/");
  if (
    !/^\/(?:[A-Za-z0-9._~-]+\/)+$/.test(value) || segments.some((s) => s === "." || s === "..")
  ) {
    throw new ConfigError(`${name} must be a path like /_pieces/ (starting and ending with /)`);
  }
  return value;
}

/** An Ethereum address, returned EIP-55 checksummed; a mixed-case one must carry a valid checksum. */
export function parseAddress(value: string, name: string): string {
  // isAddress checks the EIP-55 checksum of a mixed-case address; all-lowercase has none.
  if (!/^0x[0-9a-fA-F]{40}$/.test(value) || !isAddress(value)) {
    throw new ConfigError(`${name} must be a 0x-prefixed 20-byte address with a valid checksum`);
  }
  return getAddress(value);
}

export function parseSecret(value: string, name: string): string {
  if (value.length < 16 || /\s/.test(value)) {
    throw new ConfigError(`${name} must be at least 16 characters without spaces`);
  }
  return value;
}

export function requireNonEmpty(value: string, name: string): string {
  if (value.trim() === "") throw new ConfigError(`${name} must not be empty`);
  return value.trim();
}

export function parseBaseUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  if (url.search || url.hash) throw new ConfigError(`${name} must not have a query or fragment`);
  return url.href.replace(/\/+$/, "");
}

export function parseProxyList(value: string, name: string): IpRange[] {
  try {
    return parseIpRanges(value);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}
