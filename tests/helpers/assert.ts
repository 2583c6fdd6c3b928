/**
 * Assertions, from node:assert (built into Deno; @std/assert on JSR is not
 * reachable from our machines), under the names Deno tests usually use.
 * A message is passed on only when given: some @types/node versions accept
 * `string`, but not `string | undefined`, as the message.
 */
import assert from "node:assert/strict";

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  if (message === undefined) assert.deepStrictEqual(actual, expected);
  else assert.deepStrictEqual(actual, expected, message);
}

export function assertNotEquals<T>(actual: T, expected: T, message?: string): void {
  if (message === undefined) assert.notDeepStrictEqual(actual, expected);
  else assert.notDeepStrictEqual(actual, expected, message);
}

export function assertMatch(actual: string, pattern: RegExp, message?: string): void {
  if (message === undefined) assert.match(actual, pattern);
  else assert.match(actual, pattern, message);
}

export function assertOk(value: unknown, message?: string): asserts value {
  if (message === undefined) assert.ok(value);
  else assert.ok(value, message);
}

export async function assertRejects(fn: () => Promise<unknown>, check: RegExp) {
  await assert.rejects(fn, check);
}
