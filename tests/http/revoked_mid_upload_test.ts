/**
 * A token revoked while its upload's body comes makes no deal (decisions:
 * "Holding up, second pass"): the caller is checked again before the commit,
 * on POST /api/upload and on the tus PATCH that brings the last byte (401
 * revoked_token; nothing stored, nothing charged). Before, only the start of
 * a request checked it, and a 5 GiB PATCH at the minimum rate runs ~91 h.
 */
import { assertEquals } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { holdUpload } from "../helpers/held_upload.ts";
import { bearer, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { tusCreated } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";

const FILE = seededBytes(256 * 1024, 81);

async function revoke(server: TestServer, token: string): Promise<void> {
  const answer = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: bearer(token),
    body: JSON.stringify({ jti: jtiOf(token) }),
  });
  await answer.body?.cancel();
  assertEquals(answer.status, 200);
}

/**
 * Once the held request's body is being read (its memory booked: the caller
 * was checked at the start), revokes the token, sends the rest, and expects
 * 401 revoked_token.
 */
async function revokeWhileSending(
  server: TestServer,
  token: string,
  held: Awaited<ReturnType<typeof holdUpload>>,
): Promise<void> {
  try {
    await eventually(
      () => server.server.services.admission.pinnedBytes > 0,
      "the body admitted",
    );
    await revoke(server, token);
    await held.send(FILE.slice(1024));
    const answer = await held.response;
    assertEquals(answer?.status, 401);
    assertEquals(JSON.parse(answer!.body).error, "revoked_token");
  } finally {
    held.close();
  }
}

/** Bytes the user counted today, read with a fresh token of theirs (the upload's was revoked). */
async function usedToday(server: TestServer): Promise<number> {
  const { token: other } = await signup(server, { email: "dev@example.org", label: "second" });
  const answer = await fetch(`${server.url}/api/usage`, { headers: bearer(other) });
  const usage = await answer.json();
  return usage.quotaBytes - usage.remainingTodayBytes;
}

Deno.test("revoked mid-upload: POST /api/upload whose token is revoked while its body comes makes no deal", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const held = await holdUpload({
    port: server.server.port,
    from: "127.0.0.1",
    path: "/api/upload?cid=bafkrevokedmid01",
    length: FILE.length,
    headers: [`Authorization: Bearer ${token}`],
    first: FILE.slice(0, 1024),
  });
  await revokeWhileSending(server, token, held);
  assertEquals(await server.server.metadata.catalog.getPiece("bafkrevokedmid01"), null);
  assertEquals(await usedToday(server), 0);
});

Deno.test("revoked mid-upload: the tus PATCH with the last byte, its token revoked meanwhile, makes no deal", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const url = await tusCreated(server.url, {
    cid: "bafkrevokedmid02",
    length: FILE.length,
    headers: bearer(token),
  });
  const held = await holdUpload({
    port: server.server.port,
    from: "127.0.0.1",
    method: "PATCH",
    path: new URL(url).pathname,
    contentType: "application/offset+octet-stream",
    length: FILE.length,
    headers: ["Tus-Resumable: 1.0.0", "Upload-Offset: 0", `Authorization: Bearer ${token}`],
    first: FILE.slice(0, 1024),
  });
  await revokeWhileSending(server, token, held);
  assertEquals(await server.server.metadata.catalog.getPiece("bafkrevokedmid02"), null);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
  assertEquals(await usedToday(server), 0);
});
