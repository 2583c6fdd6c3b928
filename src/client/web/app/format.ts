/// <reference lib="dom" />
/**
 * Numbers and times in the words a person reads: sizes in KiB/MiB/GiB (the
 * server's caps are powers of two, so 64 KiB reads as 64 KiB), dates in the
 * reader's locale, and waits as "7 h 46 min" rather than seconds.
 */

const UNITS = ["KiB", "MiB", "GiB", "TiB"];

/** 1536 → "1.5 KiB"; under 1 KiB in bytes. A value that rounds to 1024 takes the next unit. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (unit < UNITS.length - 1 && Number(rounded(value)) >= 1024) {
    value /= 1024;
    unit++;
  }
  return `${rounded(value)} ${UNITS[unit]}`;
}

/** Whole numbers from 100 up, one decimal below (none when it is 0). */
function rounded(value: number): string {
  return value.toFixed(value >= 100 ? 0 : 1).replace(/\.0$/, "");
}

/** An RFC 3339 time as a date in the reader's locale, e.g. "22 Nov 2026". */
export function formatDate(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, {
    day: "numeric",
    month: "short",
    year: "numeric",
  });
}

/** An RFC 3339 time as a time of day in the reader's locale, e.g. "01:00". */
export function formatTime(iso: string): string {
  return new Date(iso).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

/** A wait in seconds as "2 days 3 h", "7 h 46 min", "5 min" or "40 s". */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60) % 60;
  const hours = Math.floor(s / 3600) % 24;
  const days = Math.floor(s / 86400);
  if (days > 0) return `${days} day${days === 1 ? "" : "s"}${hours > 0 ? ` ${hours} h` : ""}`;
  if (hours > 0) return `${hours} h${minutes > 0 ? ` ${minutes} min` : ""}`;
  return `${minutes} min`;
}

/** part of whole as a whole percentage, 0 when whole is 0. */
export function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.floor((part / whole) * 100);
}
