/**
 * Assertions, from node:assert (built into Deno; @std/assert on JSR is not
 * reachable from our machines), under the names Deno tests usually use.
 */
import assert from "node:assert/strict";

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message);
}

export function assertNotEquals<T>(actual: T, expected: T, message?: string): void {
  assert.notDeepStrictEqual(actual, expected, message);
}

export function assertMatch(actual: string, pattern: RegExp, message?: string): void {
  assert.match(actual, pattern, message);
}

export function assertOk(value: unknown, message?: string): asserts value {
  assert.ok(value, message);
}

export async function assertRejects(fn: () => Promise<unknown>, check: RegExp) {
  await assert.rejects(fn, check);
}
