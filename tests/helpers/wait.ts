/**
 * Waiting on something observable instead of sleeping: poll a check with a
 * short pause between tries, under an overall deadline, and fail naming what
 * was awaited.
 */

export interface EventuallyOptions {
  /** Overall deadline (default 5000 ms). */
  timeoutMs?: number;
  /** Pause between checks (default 10 ms). */
  intervalMs?: number;
}

/** Resolves once check() holds; throws "timed out … waiting for: <what>" after timeoutMs. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  options: EventuallyOptions = {},
): Promise<void> {
  const { timeoutMs = 5000, intervalMs = 10 } = options;
  const deadline = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The promise's outcome, or a failure naming `what` if it has not settled within ms. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: not settled within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How many turns the event loop took (timer callbacks that ran) while `work`
 * ran: none when it held the loop throughout.
 */
export async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let counting = true;
  const tick = () => {
    if (!counting) return;
    turns++;
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  try {
    await work();
  } finally {
    counting = false;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return turns;
}
