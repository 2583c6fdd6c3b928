/**
 * The check most refusal tests make: the status, then the JSON error code of
 * the body (errorOf also checks the body's shape), in one line instead of two
 * that every such test spelled alike.
 */
import { assertEquals } from "./assert.ts";
import { errorOf } from "./server.ts";

/** Asserts `response` is status with the JSON error `code`, in that order; reads the body. */
export async function assertErrorAnswer(
  response: Response,
  status: number,
  code: string,
): Promise<void> {
  assertEquals(response.status, status);
  assertEquals((await errorOf(response)).error, code);
}
