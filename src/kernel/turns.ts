/**
 * Long synchronous work cut into slices, so the event loop keeps its turns:
 * a slice runs until its budget is spent, then requests waiting on I/O are
 * served before the next one. Why a budget of time and not of items: an item
 * costs what the disk and the machine make it cost, and the bound that
 * matters is how long other clients wait (the rule: never 50 ms).
 */

/** How long one slice may hold the event loop: well under the 50 ms a stall may last. */
export const SLICE_MS = 10;

/** A macrotask turn: pending I/O (requests being served) runs before the work goes on. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Feeds `items` to `step`, each slice of them inside `slice` (e.g. one
 * transaction), yielding to the event loop between slices. `slice` must run
 * its callback synchronously; the clock is read every `checkEvery` items.
 * `afterSlice`, if given, runs after each slice in a turn of its own (work
 * the slice left behind, such as a WAL checkpoint, that would otherwise
 * lengthen the slice's turn).
 */
export async function inSlices<T>(
  items: Iterable<T>,
  step: (item: T) => void,
  options: {
    slice?: (run: () => void) => void;
    budgetMs?: number;
    checkEvery?: number;
    afterSlice?: () => void;
  } = {},
): Promise<void> {
  const slice = options.slice ?? ((run) => run());
  const budgetMs = options.budgetMs ?? SLICE_MS;
  const checkEvery = options.checkEvery ?? 64;
  const iterator = items[Symbol.iterator]();
  let done = false;
  while (!done) {
    const deadline = performance.now() + budgetMs;
    slice(() => {
      for (let n = 1;; n++) {
        const next = iterator.next();
        if (next.done) {
          done = true;
          return;
        }
        step(next.value);
        if (n % checkEvery === 0 && performance.now() >= deadline) return;
      }
    });
    if (options.afterSlice) {
      await yieldToEventLoop();
      options.afterSlice();
    }
    if (!done) await yieldToEventLoop();
  }
}

/**
 * Runs `step` over the indexes 0 … count-1, a range of `rangeSize` at a time,
 * in order, yielding to the event loop whenever a slice's budget is spent:
 * for loops over typed arrays, where one call per item would cost more than
 * the item's work.
 */
export function inRanges(
  count: number,
  step: (from: number, to: number) => void,
  rangeSize = 16_384,
): Promise<void> {
  return inSlices(rangesOf(count, rangeSize), ({ from, to }) => step(from, to), { checkEvery: 1 });
}

function* rangesOf(count: number, size: number): Generator<{ from: number; to: number }> {
  for (let from = 0; from < count; from += size) yield { from, to: Math.min(count, from + size) };
}
