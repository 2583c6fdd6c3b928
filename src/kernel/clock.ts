/**
 * Time, injected: every component takes a Clock instead of calling Date.now,
 * so tests can cross UTC midnight without sleeping. Also the one abortable
 * sleep the server's and the SDK's retries wait with. Imports nothing, so
 * the SDK (src/client/sdk/) may use it.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Resolves after ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** True if the promise resolved within ms (its rejection is thrown); it runs on either way. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, as YYYY-MM-DD (daily caps reset at 00:00 UTC). */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The instant of the next 00:00 UTC after ms. */
export function nextUtcMidnight(ms: number): number {
  return (Math.floor(ms / DAY_MS) + 1) * DAY_MS;
}

/** RFC 3339 UTC with second precision: 2026-11-21T12:00:00Z. */
export function toRfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export function addDays(ms: number, days: number): number {
  return ms + days * DAY_MS;
}
