/**
 * The README's tour shows the server's answers as they are: its sample of
 * the first upload's answer has exactly the fields the real server answers
 * that upload with (the values that vary, ids and ports, aside).
 */
import { assertEquals } from "../helpers/assert.ts";
import { blockAfter } from "../helpers/doc_blocks.ts";
import { startTestServer } from "../helpers/server.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("docs: the README tour's sample upload answer has the server's fields", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const sample = JSON.parse(blockAfter(readme, "**1. Upload without an account.**", "json"));
  await using server = await startTestServer();
  const answer = await server.upload(sample.cid, "hello world\n", {
    contentType: "text/plain",
    filename: "hello.txt",
  });
  assertEquals(answer.status, 200);
  const real = await answer.json();
  assertEquals(Object.keys(sample), Object.keys(real));
  for (const field of ["cid", "size", "term", "sponsored", "owner", "roots"]) {
    assertEquals(sample[field], real[field], field);
  }
});
